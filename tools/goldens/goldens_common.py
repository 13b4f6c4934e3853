"""Helpers shared by the golden scripts in this folder (standard library only).

The scripts run in the official repositories' own venvs, outside this repository's package, so
this module imports nothing from `seer` and nothing beyond the standard library; each script puts
this folder on `sys.path` before importing it.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
import types
from pathlib import Path


def git_rev(path: Path) -> str | None:
    """The commit checked out at `path`, or None (not a git checkout, or no git)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except Exception:
        return None


def import_dir_as_package(pkg_name: str, directory: Path, modules: list[str]) -> dict:
    """Import `modules` from `directory` as submodules of a synthetic package, so the official
    files' relative imports (`from .configuration_llada import ...`) work whether or not the
    folder has an `__init__.py`."""
    directory = Path(directory).resolve()
    for m in modules:
        if not (directory / f"{m}.py").is_file():
            raise FileNotFoundError(directory / f"{m}.py")
    pkg = types.ModuleType(pkg_name)
    pkg.__path__ = [str(directory)]
    pkg.__package__ = pkg_name
    sys.modules[pkg_name] = pkg
    return {m: importlib.import_module(f"{pkg_name}.{m}") for m in modules}


def import_file(mod_name: str, path: Path):
    """Import one official file as module `mod_name`."""
    spec = importlib.util.spec_from_file_location(mod_name, str(path))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    spec.loader.exec_module(mod)
    return mod
