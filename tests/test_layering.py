"""The package's layers: arrows only point down (DESIGN.md, "Layout").

    cli.py -> commands/ -> the edges (serve, ui, harness, distributed, batch, calibration, bench,
           demo, provenance) -> data/ (data/synthetic: the built-in models' tasks)
           -> the runtime core (pipeline, engine, boundary, diffusion, models)
           -> the ground floor (kernels, config, spec, errors, extras, images, progress)
    training/ (the build step that made the built-in models) -> data/ and the core; nothing
           imports it.

Every arrow from one layer to a higher one fails: a core module never imports the data layer,
the edges, the commands or the CLI; the data layer never imports an edge (the old cycle
data -> demo -> eval -> data ran through such an arrow); an edge never imports a command; a
ground-floor module imports nothing but the ground floor. Modules of one layer may import each
other (the ui mounts on the server, Ray's batch drives `seer batch`). Function-local imports count
too: a lazy import is still an arrow. Every `seer.*` import of every module under src/seer is read
with `ast`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import seer

SRC = Path(seer.__file__).parent
GROUND = {"kernels", "config", "spec", "errors", "extras", "images", "progress"}
CORE = {"pipeline", "likelihood", "engine", "boundary", "diffusion", "models"} | GROUND
# above the core: none of these may be imported by a core module
EDGES = {"serve", "ui", "harness", "distributed", "batch", "calibration", "provenance", "bench",
         "demo", "plots", "profile", "throughput"}  # fmt: skip
UPPER = {"data", "training", "commands", "cli"} | EDGES
# each layer's rank: an arrow to a higher rank is upward ("" is the package itself: lazy exports)
RANK = {"": 0, **dict.fromkeys(GROUND, 0), **dict.fromkeys(CORE - GROUND, 1), "data": 2,
        **dict.fromkeys(EDGES, 3), "commands": 4, "cli": 5, "training": 6}  # fmt: skip

# Known upward arrows, each owned by another area and being removed this session; the test fails
# if one disappears without leaving this list (so the list only shrinks).
ALLOWED: set[tuple[str, str]] = set()


def _part(module: str) -> str:
    """seer.models.loader -> models; seer.cli -> cli; seer -> ''."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(name: str, path: Path, modules) -> set[str]:
    """The seer modules `name` imports (absolute and relative, at any depth of the file)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}  # `from seer import demo`
        elif isinstance(node, ast.Call) and _dynamic(node):
            found.add(_dynamic(node))
    return {m for m in found if m.startswith("seer") and m in modules and m != name}


def _dynamic(node: ast.Call) -> str | None:
    """The module an `importlib.import_module("seer.x.y")` call names, or the package an
    f-string names before its first field (`f"seer.x.{name}"` -> seer.x); else None."""
    func = node.func
    if getattr(func, "attr", getattr(func, "id", None)) != "import_module" or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.JoinedStr) and arg.values:
        arg = arg.values[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value.rstrip(".")
    return None


def _arrows() -> set[tuple[str, str]]:
    modules = _modules()
    return {(name, m) for name, path in modules.items() for m in _imports(name, path, modules)}


def _upward(src: str, dst: str) -> bool:
    a, b = _part(src), _part(dst)
    if a == "":  # `seer/__init__.py`: the public names, imported on first use (PEP 562)
        return False
    if a in GROUND:
        return b not in GROUND and b != ""
    if b == "training":  # the build step: nothing imports it
        return a != "training"
    return RANK.get(b, max(RANK.values()) + 1) > RANK.get(a, 0)  # an unplaced package: upward


def test_the_core_imports_nothing_above_it():
    bad = sorted((a, b) for a, b in _arrows() if _upward(a, b) and (a, b) not in ALLOWED)
    assert not bad, "upward imports:\n" + "\n".join(f"  {a} -> {b}" for a, b in bad)


def _cycles() -> set[str]:
    """The top-level packages on a cycle of package-level arrows, the core's left out (pipeline
    and engine are one layer) and the package's own lazy exports too."""
    arrows = {(_part(a), _part(b)) for a, b in _arrows()}
    arrows = {(a, b) for a, b in arrows if a != b and "" not in (a, b)}
    reach = {p: {b for a, b in arrows if a == p} for p in RANK}
    for _ in RANK:  # transitive closure of a small graph
        reach = {p: r | {c for q in r for c in reach.get(q, ())} for p, r in reach.items()}
    return {p for p in RANK if p in reach[p] and p not in CORE}


# `seer serve --ui` mounts the page on the server's app; the page drives that server's engine.
KNOWN_CYCLES = {"serve", "ui"}


def test_the_packages_have_no_cycle():
    """The old data -> demo -> eval -> data cycle, or any new one, fails."""
    assert _cycles() <= KNOWN_CYCLES, f"packages on a cycle: {sorted(_cycles() - KNOWN_CYCLES)}"
    assert _cycles() == KNOWN_CYCLES, "a known cycle is gone: remove it from KNOWN_CYCLES"


def test_the_allow_list_only_holds_arrows_that_still_exist():
    gone = sorted(ALLOWED - _arrows())
    assert not gone, f"remove from ALLOWED (fixed, thank you): {gone}"


def test_every_package_is_placed_in_a_layer():
    parts = {_part(m) for m in _modules()} - {""}
    assert parts <= CORE | UPPER, f"place these in a layer of this test: {parts - CORE - UPPER}"


@pytest.mark.parametrize(
    ("src", "dst", "upward"),
    [
        ("seer.models.factory", "seer.data.synthetic.tokenizer", True),
        ("seer.engine.engine", "seer.data", True),
        ("seer.config", "seer.models.loader", True),
        ("seer.commands.demo", "seer.demo", False),
        ("seer.pipeline", "seer.engine", False),
        ("seer.config", "seer.errors", False),
        ("seer.data.builtin", "seer.demo", True),  # the old cycle's upward arrow
        ("seer.data.builtin", "seer.plots", True),
        ("seer.serve.app", "seer.commands.options", True),
        ("seer.commands.batch", "seer.cli", True),
        ("seer.demo", "seer.training.builtin", True),
        ("seer.training.builtin", "seer.data.synthetic.tasks", False),
        ("seer.throughput", "seer.data", False),
        ("seer.ui.page", "seer.serve.app", False),
    ],
)
def test_what_counts_as_upward(src, dst, upward):
    assert _upward(src, dst) is upward


def test_dynamic_imports_are_read(tmp_path):
    """The old cycle's data -> demo arrow was an `import_module(f"seer.demo.{...}")` at one
    point: a dynamic import is an arrow too."""
    path = tmp_path / "x.py"
    path.write_text(
        "import importlib\ndef f(t):\n    return importlib.import_module(f'seer.demo.{t}')\n"
    )
    got = _imports("seer.data.builtin", path, {"seer.demo", "seer.data.builtin"})
    assert got == {"seer.demo"} and _upward("seer.data.builtin", "seer.demo")


def test_relative_and_lazy_imports_are_read(tmp_path):
    path = tmp_path / "x.py"
    path.write_text(
        "from . import y\nimport os\ndef f():\n    from ..demo import run\n    import seer.data\n"
    )
    mods = {"seer.models.y", "seer.demo", "seer.demo.run", "seer.data", "seer.models.x"}
    got = _imports("seer.models.x", path, mods)
    assert got == {"seer.models.y", "seer.demo", "seer.demo.run", "seer.data"}
