"""The package's layers: arrows only point down (docs/architecture.md, "Layout").

    cli -> commands -> the edges (serve, ui, harness, distributed)
        -> the library over the engine (lm, likelihood, data, batch, calibrate, demo,
           provenance, throughput, sim)
        -> engine, roofline -> boundary -> diffusion -> models
        -> the ground floor (errors, spec, sampling, policies, images, kernels, extras,
           progress, plots, threads)

Every arrow from one layer to a higher one fails: the ground floor imports nothing above it, a
model never imports the loop, the loop never imports the boundary, the engine never imports
the facade (lm), the data or the library over it, nothing of the library imports an edge, an edge
never imports a command, a command never imports the CLI. Modules of one layer may import each
other (Ray's batch drives `seer batch`'s rows), but no two packages may import each other.

The installable package is the product; the lab lives beside it (`benchmarks/seerbench`, the
benchmark library; `training/`, how the built-in models were trained; `synthetic/`, the built-in
tasks' generators, whose requests the package ships as data; `tools/`) and imports the package,
never the reverse: a package module that imports the lab fails.

Function-local imports count too: a lazy import is still an arrow, and so is an import for type
checking only. Every import of every module under src/seer is read with `ast`.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

import seer

SRC = Path(seer.__file__).parent
ROOT = SRC.parents[1]

# each layer of the package, bottom first ("" is `seer/__init__.py`: its lazy exports)
LAYERS: list[set[str]] = [
    {
        "errors",
        "spec",
        "sampling",
        "policies",
        "images",
        "kernels",
        "extras",
        "progress",
        "plots",
        "threads",
    },
    {"models"},
    {"diffusion"},
    {"boundary"},
    {"engine", "roofline"},  # the roofline prices the engine's forwards; the simulator uses both
    {
        "lm",
        "likelihood",
        "data",
        "batch",
        "calibrate",
        "demo",
        "provenance",
        "throughput",
        "sim",
    },
    {"serve", "ui", "harness", "distributed"},
    {"commands"},
    {"cli"},
]
RANK = {"": len(LAYERS), **{p: i for i, layer in enumerate(LAYERS) for p in layer}}
CORE = set().union(*LAYERS[1:5]) | LAYERS[0]  # one layer each, the ground floor below them

# the lab: the top-level packages beside src/ (none of them is in the wheel)
LAB = {"seerbench", "training", "benchmarks", "tools", "synthetic"}

# Known upward arrows, each owned by another area; the test fails if one disappears without
# leaving this list (so the list only shrinks).
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


def _all_imports(name: str, path: Path) -> set[str]:
    """Every module `name` imports (absolute and relative, at any depth of the file)."""
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
    return found


def _imports(name: str, path: Path, modules) -> set[str]:
    """The seer modules `name` imports."""
    found = _all_imports(name, path)
    return {m for m in found if m.startswith("seer") and m in modules and m != name}


def _lab_imports(name: str, path: Path) -> set[str]:
    """What `name` imports of the lab."""
    return {m for m in _all_imports(name, path) if m.split(".")[0] in LAB}


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
    if "" in (a, b):  # `seer/__init__.py`: the public names, imported on first use (PEP 562)
        return False
    return RANK.get(b, len(LAYERS)) > RANK.get(a, -1)  # an unplaced package: upward


def test_the_core_imports_nothing_above_it():
    bad = sorted((a, b) for a, b in _arrows() if _upward(a, b) and (a, b) not in ALLOWED)
    assert not bad, "upward imports:\n" + "\n".join(f"  {a} -> {b}" for a, b in bad)


def _lab_arrows(modules: dict[str, Path]) -> set[tuple[str, str]]:
    return {(name, m) for name, path in modules.items() for m in _lab_imports(name, path)}


def test_the_package_never_imports_the_lab():
    bad = sorted(_lab_arrows(_modules()))
    assert not bad, "the package imports the lab:\n" + "\n".join(f"  {a} -> {b}" for a, b in bad)


@pytest.mark.parametrize(
    "line",
    [
        "from seerbench import runs",
        "import training.trainer",
        "def f():\n    from seerbench.compare import Config",
        "from training import builtin as t",
    ],
)
def test_an_import_of_the_lab_fails(tmp_path, line):
    """A package module that imports the benchmark library or the training code is caught."""
    path = tmp_path / "x.py"
    path.write_text(f"import seer\n{line}\n")
    assert _lab_arrows({"seer.demo": path})
    assert not _lab_arrows({"seer.demo": SRC / "errors.py"})


def test_the_lab_is_beside_the_package_not_in_it():
    """Each name of the lab is a folder beside src/ (or inside benchmarks/), none of the package."""
    assert (ROOT / "benchmarks" / "seerbench" / "__init__.py").is_file()
    assert (ROOT / "training" / "__init__.py").is_file()
    assert (ROOT / "synthetic" / "__init__.py").is_file()
    assert not (SRC / "data" / "synthetic").exists()
    parts = {_part(m) for m in _modules()}
    assert not parts & LAB and not (SRC / "bench").exists() and not (SRC / "training").exists()


def _cycles() -> set[str]:
    """The top-level packages on a cycle of package-level arrows (the package's own lazy
    exports left out)."""
    arrows = {(_part(a), _part(b)) for a, b in _arrows()}
    arrows = {(a, b) for a, b in arrows if a != b and "" not in (a, b)}
    reach = {p: {b for a, b in arrows if a == p} for p in RANK}
    for _ in RANK:  # transitive closure of a small graph
        reach = {p: r | {c for q in r for c in reach.get(q, ())} for p, r in reach.items()}
    return {p for p in RANK if p in reach[p]}


KNOWN_CYCLES: set[str] = set()


def test_the_packages_have_no_cycle():
    """The old data -> demo -> eval -> data cycle, or any new one, fails."""
    assert _cycles() <= KNOWN_CYCLES, f"packages on a cycle: {sorted(_cycles() - KNOWN_CYCLES)}"
    assert _cycles() == KNOWN_CYCLES, "a known cycle is gone: remove it from KNOWN_CYCLES"


def _module_cycle(arrows: set[tuple[str, str]]) -> list[str] | None:
    """A cycle of modules (a package's `__init__`, which re-exports its modules, left out), or
    None."""
    packages = {n for n, p in _modules().items() if p.name == "__init__.py"}
    graph: dict[str, set[str]] = {}
    for a, b in arrows:
        if a not in packages and b not in packages:
            graph.setdefault(a, set()).add(b)
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        return e.args[1]
    return None


def test_no_module_is_on_a_cycle():
    """Not even a type-checking import closes a circle (the loop's old forward -> loop -> state
    -> forward)."""
    assert _module_cycle(_arrows()) is None, f"modules on a cycle: {_module_cycle(_arrows())}"
    old = {
        ("seer.diffusion.forward", "seer.diffusion.loop"),
        ("seer.diffusion.loop", "seer.diffusion.state"),
        ("seer.diffusion.state", "seer.diffusion.forward"),
    }
    assert set(_module_cycle(_arrows() | old)) <= {a for a, _ in old}


def test_the_allow_list_only_holds_arrows_that_still_exist():
    gone = sorted(ALLOWED - _arrows())
    assert not gone, f"remove from ALLOWED (fixed, thank you): {gone}"


def test_every_package_is_placed_in_a_layer():
    parts = {_part(m) for m in _modules()} - {""}
    placed = set().union(*LAYERS)
    assert parts <= placed, f"place these in a layer of this test: {parts - placed}"


@pytest.mark.parametrize(
    ("src", "dst", "upward"),
    [
        ("seer.models.factory", "seer.data.builtin", True),
        ("seer.models.llada", "seer.diffusion.loop", True),
        ("seer.diffusion.loop", "seer.boundary.truncation", True),
        ("seer.boundary.probe", "seer.engine.engine", True),
        ("seer.engine.engine", "seer.data", True),
        ("seer.engine.engine", "seer.lm", True),
        ("seer.sampling", "seer.models.loader", True),
        ("seer.plots", "seer.models", True),
        ("seer.commands.demo", "seer.demo", False),
        ("seer.lm", "seer.engine", False),
        ("seer.engine.engine", "seer.boundary.truncation", False),
        ("seer.boundary.probe", "seer.diffusion.loop", False),
        ("seer.sampling", "seer.errors", False),
        ("seer.data.builtin", "seer.demo", False),  # one layer: their cycle is what fails
        ("seer.calibrate.run", "seer.plots", False),
        ("seer.demo", "seer.serve", True),
        ("seer.serve.app", "seer.commands.options", True),
        ("seer.commands.batch", "seer.cli", True),
        ("seer.throughput", "seer.data", False),
        ("seer.ui.page", "seer.serve.app", False),
        ("seer.models.x", "seer.unplaced", True),
    ],
)
def test_what_counts_as_upward(src, dst, upward):
    assert _upward(src, dst) is upward


def test_a_cycle_of_one_layer_is_found(monkeypatch):
    """Two packages of one layer that import each other fail (the old data <-> demo cycle)."""
    real = _arrows()
    fake = real | {("seer.data.builtin", "seer.demo"), ("seer.demo", "seer.data")}
    monkeypatch.setitem(globals(), "_arrows", lambda: fake)
    assert {"data", "demo"} <= _cycles()


def test_dynamic_imports_are_read(tmp_path):
    """The old cycle's data -> demo arrow was an `import_module(f"seer.demo.{...}")` at one
    point: a dynamic import is an arrow too."""
    path = tmp_path / "x.py"
    path.write_text(
        "import importlib\ndef f(t):\n    return importlib.import_module(f'seer.demo.{t}')\n"
    )
    got = _imports("seer.data.builtin", path, {"seer.demo", "seer.data.builtin"})
    assert got == {"seer.demo"}


def test_relative_and_lazy_imports_are_read(tmp_path):
    path = tmp_path / "x.py"
    path.write_text(
        "from . import y\nimport os\ndef f():\n    from ..demo import run\n    import seer.data\n"
    )
    mods = {"seer.models.y", "seer.demo", "seer.demo.run", "seer.data", "seer.models.x"}
    got = _imports("seer.models.x", path, mods)
    assert got == {"seer.models.y", "seer.demo", "seer.demo.run", "seer.data"}
