"""lmms-eval hooks of the tiny VQA task: the images are the first VQA model's sample images."""

from pathlib import Path

from PIL import Image

import seer

IMAGES = Path(seer.__file__).parents[2] / "checkpoints" / "builtin-vqa-v1" / "images"


def doc_to_visual(doc):
    return [Image.open(IMAGES / doc["image"]).convert("RGB")]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return doc["question"]


def doc_to_target(doc):
    return doc["answer"]
