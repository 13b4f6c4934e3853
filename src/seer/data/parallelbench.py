"""ParallelBench (furiosa-ai/ParallelBench) as a data source: ``parallelbench:ROOT[/GROUP[/TASK]]``.

ROOT is a user's checkout of the benchmark (the folder that holds ``dataset/``); we ship none of
its files (the repository has no license). The official test split lives in
``ROOT/dataset/parallel_bench/data/output/test/<group>/<task>.jsonl``, one task per file, with
the group's ``task_config.yaml`` holding each task's ``prompt`` template and ``metric`` name.
``parallelbench:ROOT`` selects every task (groups whose name starts with ``_`` are skipped, as
the official task list does), ``parallelbench:ROOT/waiting_line`` one group,
``parallelbench:ROOT/waiting_line/copy`` one task.

A row becomes a chat exactly as the official loader builds it (``dataset/parallel_bench/
__init__.py``): the template filled from the row's ``input`` (``str.format``, then the literal
two characters ``\\n`` turned into newlines), each in-context example before it as a user turn
and an assistant turn (its ``answer`` when that is a string, else ``answer["example"]``), then
the row's own user turn. The model's chat template is applied later, by the request path. Each
`Example` carries the task name as its ``family``, the row's ``answer`` (a string or a dict) as
its ``reference``, the task's metric name as its ``metric`` (scored by `seer.data.score`) and,
as ``answer``, the reference text (the string, or the dict's ``example``). Ids are
``<task>/<row index>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeGuard, overload

from seer.data.example import Example
from seer.data.files import loads
from seer.data.parallelbench_metrics import check_reference
from seer.errors import SeerError

PREFIX = "parallelbench:"
TEST_DIR = Path("dataset", "parallel_bench", "data", "output", "test")


def is_parallelbench(source: object) -> TypeGuard[str]:
    return isinstance(source, str) and source.startswith(PREFIX)


def parallelbench_examples(source: str) -> list[Example]:
    """Every row of the tasks `source` selects, task by task (sorted by name), in file order."""
    root, selector = resolve(source.removeprefix(PREFIX))
    out: list[Example] = []
    for name in select(root, selector):
        out.extend(read_task(root, name))
    return out


def source_files(source: str) -> tuple[Path, list[Path]]:
    """(ROOT, the test files and task configs `source` reads): what identifies its data."""
    root, selector = resolve(source.removeprefix(PREFIX))
    known = tasks(root)
    files = [known[name] for name in select(root, selector)]
    configs = sorted({f.parent / "task_config.yaml" for f in files})
    return root, files + [c for c in configs if c.is_file()]


def resolve(spec: str) -> tuple[Path, str]:
    """(ROOT, task selector) of ``ROOT[/GROUP[/TASK]]``: ROOT is the deepest of the path and its
    two parents that holds the test split."""
    if not spec.strip():
        raise SeerError(
            "parallelbench: give the checkout's folder, e.g. parallelbench:ROOT/waiting_line/copy"
        )
    path = Path(spec).expanduser()
    candidates = [path, path.parent, path.parent.parent][: len(path.parts)]
    for depth, root in enumerate(candidates):
        if (root / TEST_DIR).is_dir():
            return root, "/".join(path.parts[len(path.parts) - depth :])
    existing = next((c for c in candidates if c.is_dir()), None)
    if existing is None:
        raise SeerError(f"parallelbench: {spec!r} does not exist; give a ParallelBench checkout")
    raise SeerError(
        f"parallelbench: {existing} is not a ParallelBench checkout (no {TEST_DIR}); give the "
        "folder that holds dataset/"
    )


def label(source: str) -> str:
    """The task selector of a ``parallelbench:`` source (``waiting_line/copy``, ``waiting_line``, or
    ``""`` for every task), for file names and plot titles: ROOT is this machine's path, not the
    data's. Without the checkout (a record read elsewhere), the path's last two parts."""
    spec = source.removeprefix(PREFIX)
    try:
        return resolve(spec)[1]
    except SeerError:
        return "/".join(Path(spec).parts[-2:])


def tasks(root: Path) -> dict[str, Path]:
    """Task name (``group/task``) -> its test file, sorted by name."""
    test = root / TEST_DIR
    found = {
        f"{f.parent.name}/{f.stem}": f
        for f in test.glob("*/*.jsonl")
        if not f.parent.name.startswith("_")
    }
    return dict(sorted(found.items()))


def select(root: Path, selector: str) -> list[str]:
    """The task names `selector` (empty, a group or a task) picks; an unknown one is an error
    that lists what there is."""
    known = tasks(root)
    if not known:
        raise SeerError(f"parallelbench: {root / TEST_DIR} holds no <group>/<task>.jsonl files")
    if not selector:
        return list(known)
    if selector in known:
        return [selector]
    group = selector.split("/")[0]
    in_group = [n for n in known if n.split("/")[0] == group]
    if in_group and "/" not in selector:
        return in_group
    if in_group:
        names = ", ".join(n.split("/")[1] for n in in_group)
        raise SeerError(f"parallelbench: no task {selector!r}; {group} holds: {names}")
    groups = ", ".join(sorted({n.split("/")[0] for n in known}))
    raise SeerError(f"parallelbench: no task or group {selector!r}; groups: {groups}")


def task_config(root: Path, name: str) -> dict:
    """The task's entry of its group's ``task_config.yaml`` (``prompt`` and ``metric`` checked)."""
    import yaml

    path = root / TEST_DIR / name.split("/")[0] / "task_config.yaml"
    if not path.is_file():
        raise SeerError(f"parallelbench: {path} is missing (it holds the tasks' prompts)")
    try:
        configs = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise SeerError(f"{path}: not valid YAML ({' '.join(str(e).split())})") from None
    cfg = configs.get(name) if isinstance(configs, dict) else None
    if not isinstance(cfg, dict):
        raise SeerError(f"{path}: no entry for task {name!r}")
    for key in ("prompt", "metric"):
        if not isinstance(cfg.get(key), str) or not cfg[key].strip():
            raise SeerError(f"{path}: task {name!r} has no {key!r} string")
    return cfg


def read_task(root: Path, name: str) -> list[Example]:
    """The rows of one task's test file as `Example`s (see the module docstring)."""
    cfg = task_config(root, name)
    path = tasks(root)[name]
    out: list[Example] = []
    with path.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            out.append(example(loads(line, where), name, cfg, where, len(out)))
    if not out:
        raise SeerError(f"{path}: no rows")
    return out


def example(row, name: str, cfg: dict, where: str, index: int) -> Example:
    """One official row -> `Example` (`where` prefixes every error)."""
    if not isinstance(row, dict):
        raise SeerError(f"{where}: a row must be a JSON object, not {type(row).__name__}")
    reference = row.get("answer")
    turns = []
    for i, icl in enumerate(_field(row, "input", dict, where).get("icl_examples") or []):
        at = f"{where}: in-context example {i}"
        if not isinstance(icl, dict):
            raise SeerError(f"{at}: must be a JSON object")
        turns.append(
            {"role": "user", "content": fill(cfg["prompt"], _field(icl, "input", dict, at), at)}
        )
        turns.append({"role": "assistant", "content": reference_text(icl.get("answer"), at, True)})
    prompt = fill(cfg["prompt"], row["input"], where)
    answer = reference_text(reference, where, False)
    why = check_reference(cfg["metric"], reference)
    if why is not None:
        raise SeerError(f"{where}: field 'answer': {why}")
    turns.append({"role": "user", "content": prompt})
    return Example(
        id=f"{name}/{index}",
        prompt=prompt,
        messages=turns,
        answer=answer,
        family=name,
        reference=reference,
        metric=cfg["metric"],
    )


def fill(template: str, values: dict, where: str) -> str:
    """The official prompt: ``template.format(**values)`` with literal ``\\n`` made newlines."""
    try:
        return template.format(**values).replace("\\n", "\n")
    except KeyError as e:
        raise SeerError(f"{where}: field 'input': no {e.args[0]!r} for the task's prompt") from None
    except (IndexError, ValueError) as e:
        raise SeerError(f"{where}: the task's prompt template does not format ({e})") from None


@overload
def reference_text(answer: object, where: str, required: Literal[True]) -> str: ...


@overload
def reference_text(answer: object, where: str, required: bool) -> str | None: ...


def reference_text(answer: object, where: str, required: bool) -> str | None:
    """A reference's text: the string, or a dict's ``example`` (None when a dict has none; an
    in-context example's answer must have one)."""
    if isinstance(answer, str):
        return answer
    if not isinstance(answer, dict):
        raise SeerError(f"{where}: field 'answer': must be a string or an object")
    text = answer.get("example")
    if text is None and not required:
        return None
    if not isinstance(text, str):
        raise SeerError(f"{where}: field 'answer': an object needs an 'example' string")
    return text


def _field(row: dict, key: str, kind: type, where: str):
    value = row.get(key)
    if not isinstance(value, kind):
        raise SeerError(
            f"{where}: field {key!r}: must be a JSON {'object' if kind is dict else kind.__name__}"
        )
    return value
