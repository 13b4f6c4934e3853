"""The optional extras of pyproject.toml and the one-line error when one is missing.

Each front end that needs an extra calls `require` before it does anything slow (reading data,
loading a model), so a user who installed only ``.[dev]`` gets one line naming the extra to
install instead of a `ModuleNotFoundError` traceback minutes later. The check looks modules up
(`importlib.util.find_spec`) without importing them: Ray reads its settings from the
environment when first imported, and the caller imports what it needs afterwards. The
harness adapters import their harness at the top; `import_failed` turns that import's error
into the same line (and exit status 2 when the module runs as a script).
"""

from __future__ import annotations

import importlib.util
import sys
from typing import NoReturn

from seer.errors import SeerError

# extra -> the modules its front ends import (the distribution names differ: prometheus_client)
EXTRAS: dict[str, tuple[str, ...]] = {
    "serve": ("fastapi", "uvicorn", "pydantic", "prometheus_client"),
    "ray": ("ray",),
    "data": ("datasets",),
    "eval": ("lm_eval", "accelerate", "loguru", "tenacity"),
    "kernels": ("triton",),
    "ui": ("gradio",),
}


def install_hint(extra: str) -> str:
    return f'pip install -e ".[{extra}]" (in the seer checkout)'


def missing(extra: str, modules: tuple[str, ...] | None = None) -> str | None:
    """The first module of `extra` that is not installed, or None."""
    for name in modules or EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent package missing, or a broken module
            found = False
        if not found:
            return name
    return None


def require(extra: str, what: str, modules: tuple[str, ...] | None = None) -> None:
    """A one-line `SeerError` when a module of `extra` (or `modules`) is missing: `what` (the
    command or feature) needs the extra, and how to install it."""
    name = missing(extra, modules)
    if name is not None:
        raise SeerError(
            f"{what} needs the {extra} extra ({name} is not installed): {install_hint(extra)}"
        )


def import_failed(
    extra: str, what: str, error: ImportError, module: str, hint: str = ""
) -> NoReturn:
    """For a module whose own imports need `extra` (the harness adapters): run as a script
    (`module == "__main__"`), print the one line and exit 2; imported, raise it as a `SeerError`.
    `hint`: how to install, when it is not the extra alone."""
    name = (error.name or "").split(".")[0] or error  # the package, not its submodule
    line = (
        f"{what} needs the {extra} extra ({name} is not installed): {hint or install_hint(extra)}"
    )
    if module == "__main__":
        print(f"seer: error: {line}", file=sys.stderr)
        raise SystemExit(2)
    raise SeerError(line) from None
