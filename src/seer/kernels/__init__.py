"""Optional fused kernels behind one dispatch point (`dispatch.py`), each beside its PyTorch
reference."""
