"""Write the built-in text model's name lists (synthetic/data/{first,last}_names.txt).

Source: the 1990 US Census name frequency lists (public domain), as shipped by the `names`
package on PyPI (MIT; `pip download --no-deps names==0.3.0`, then unpack it). The lists keep the
most frequent first names of each sex and the most frequent last names, title-cased ("MCDONALD"
-> "McDonald"), in frequency order.

    python tools/make_names.py /path/to/names-0.3.0/names
"""

from __future__ import annotations

import sys
from pathlib import Path

N_FIRST_EACH = 320  # per sex; their union holds ~620 names
N_LAST = 1000
OUT = Path(__file__).resolve().parents[1] / "src" / "seer" / "demo" / "data"


def title(name: str) -> str:
    name = name.capitalize()
    if name.startswith("Mc") and len(name) > 3:
        name = "Mc" + name[2:].capitalize()
    return name


def read(path: Path, n: int) -> list[str]:
    return [title(line.split()[0]) for line in path.read_text().splitlines()[:n]]


def main(src: Path) -> None:
    first = list(
        dict.fromkeys(
            x
            for pair in zip(
                read(src / "dist.male.first", N_FIRST_EACH),
                read(src / "dist.female.first", N_FIRST_EACH),
                strict=True,
            )
            for x in pair
        )
    )
    last = read(src / "dist.all.last", N_LAST)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "first_names.txt").write_text("\n".join(first) + "\n")
    (OUT / "last_names.txt").write_text("\n".join(last) + "\n")
    print(f"{len(first)} first names, {len(last)} last names -> {OUT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
