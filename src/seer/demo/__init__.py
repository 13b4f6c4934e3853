"""Toy instruction data and a word-level tokenizer for training a small LLaDA-style demo model."""
