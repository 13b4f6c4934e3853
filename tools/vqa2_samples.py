"""Draw docs/builtin-vqa2/samples.png: one held-out request of each v2 family (picture, question,
reference answer). Run from the repo root: `python tools/vqa2_samples.py`."""

import textwrap

from PIL import Image, ImageDraw, ImageFont

from synthetic import vqa2

W, H = 300, 480
sheet = Image.new("RGB", (W * 5, H * 2), "white")
draw = ImageDraw.Draw(sheet)
font = ImageFont.load_default(size=13)
for k, family in enumerate(vqa2.FAMILIES):
    e = vqa2.generate_examples(1, 4, "heldout", (family,))[0]
    x, y = (k % 5) * W + 22, (k // 5) * H + 10
    sheet.paste(e.image().resize((256, 256), Image.NEAREST), (x, y))
    text = f"[{family}] {e.question}\n" + "\n".join(textwrap.wrap(e.answer, 38))
    draw.multiline_text((x, y + 262), text, fill="black", font=font)
sheet.save("docs/builtin-vqa2/samples.png", optimize=True)
