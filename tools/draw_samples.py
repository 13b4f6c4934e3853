"""Redraw the package's sample images (src/seer/assets/images: the pictures `seer demo`, the web
page and the tests show the built-in multimodal model): one held-out request per family of
`seer.demo.IMAGE_FAMILIES`, from the evaluation side of the `builtin-vqa` task (never trained
or calibrated on; `seer.demo.draw_samples`). Run from the repo root after a change to the task:
`python tools/draw_samples.py` (tests/test_demo.py checks the shipped ones are these)."""

from pathlib import Path

from seer.demo import draw_samples

FOLDER = Path(__file__).resolve().parents[1] / "src" / "seer" / "assets" / "images"
for path in draw_samples(FOLDER):
    print(path)
