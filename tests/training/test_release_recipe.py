"""The release scripts reproduce the shipped models' recipes: every training phase parses with
the trainers' own command line, the phases chain (each starts where the last ended) and end at
the steps the model cards state; the first recipe's one-window-per-batch mode exists."""

from __future__ import annotations

import random
import re
import shlex
from pathlib import Path

import pytest

from seer.models.tokens import load_tokenizer
from synthetic.tasks import generate_examples
from training import builtin as train
from training import builtin_vqa as train_vqa
from training import trainer
from training.tokenizer import build_tokenizer

ROOT = Path(__file__).resolve().parents[2]


def phases(script: str, prefix: str) -> list[list[str]]:
    """The argument lists of every training command of a release script (`train` helper lines
    are expanded with the helper's own arguments)."""
    text = (ROOT / "tools" / script).read_text().replace("\\\n", " ")
    helper = re.search(r"train\(\) \{ (.*?) \"\$@\"; \}", text)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("train ") and helper:
            line = helper.group(1) + line[len("train") :]
        if line.startswith(prefix):
            out.append(shlex.split(line.replace('"$run"', "runs/x"))[3:])
    return out


def test_text_release_has_the_three_phases_of_the_model_card():
    cfgs = [
        trainer.parse_args(a, train.TrainConfig, "x", Path("r"), 1.0)[1]
        for a in phases("release_builtin.sh", "python -m training.builtin ")
    ]
    assert [c.windows for c in cfgs] == ["batch", "batch", "row"]
    end = 0
    for c in cfgs:
        assert c.cycle_start == end  # each phase resumes where the last ended
        end = c.cycle_start + c.total_steps
    assert [c.cycle_start for c in cfgs] == [0, 7000, 8564] and end == 13064
    card = (ROOT / "checkpoints/builtin-v1/MODEL_CARD.md").read_text()
    for step in ("7000", "8564", "13064"):
        assert step in card
    assert cfgs[2].lr == pytest.approx(8e-4) and cfgs[0].lr == pytest.approx(1.5e-3)


def test_vqa_release_has_its_one_phase():
    (args,) = phases("release_builtin_vqa.sh", "python -m training.builtin_vqa ")
    c = trainer.parse_args(args, train_vqa.TrainConfig, "x", Path("r"), 1.0)[1]
    assert c.total_steps == 6000 and c.cycle_start == 0 and c.init_from == "builtin-v1"
    assert "6000 steps" in (ROOT / "checkpoints/builtin-vqa-v1/MODEL_CARD.md").read_text()


def test_one_window_per_batch_mode(tmp_path):
    build_tokenizer(tmp_path)
    enc = train.Encoder(load_tokenizer(tmp_path))
    ex = generate_examples(16, seed=3, split="train")
    longest = max(len(enc.answer(e.answer)) for e in ex)
    seen = set()
    for seed in range(6):
        x, am, p, wins = train.make_batch(enc, ex, 64, random.Random(seed), 0.5, "batch")
        assert len(set(wins.tolist())) == 1 and longest <= int(wins[0]) <= 64
        assert bool(am[:, p:].all())  # the whole batch window is attended
        seen.add(int(wins[0]))
    assert len(seen) > 1
    with pytest.raises(ValueError, match="windows"):
        train.TrainConfig(windows="column")


def test_vqa2_release_phases_chain_at_their_until_steps():
    from training import builtin_vqa2 as train_vqa2

    args = phases("release_builtin_vqa2.sh", "python -m training.builtin_vqa2 ")
    cfgs = [trainer.parse_args(a, train_vqa2.TrainConfig, "x", Path("r"), 1.0)[1] for a in args]
    assert len(cfgs) >= 3 and all(c.cycle_start == 0 for c in cfgs)  # one schedule
    ends = [c.until for c in cfgs[:-1]]
    assert ends == sorted(ends)
    assert all(c.warm_until > 0 for c in cfgs[1:])  # the warm-up draws stay in the mix
    assert cfgs[-1].read_share > 0  # the reading warm-up
    assert all(c.window == 128 and c.init_from == "builtin-v1" for c in cfgs)
    assert cfgs[0].lr == train_vqa2.TrainConfig().lr  # the defaults are the recipe's


def test_vqa2_release_step_ships_the_export_as_builtin_vqa():
    """The release step (tools/ship_builtin_vqa2.sh, the last step of release_builtin_vqa2.sh):
    it copies every file of the run's export but the uncalibrated seer.json into the package's
    `builtin-vqa` folder, which holds them all beside its own generation_config.json, seer.json
    and card; its `seer` lines parse with the CLI, and calibrate writes to that model's
    seer.json on its own task."""
    from seer.cli import build_parser

    text = (ROOT / "tools" / "ship_builtin_vqa2.sh").read_text().replace("\\\n", " ")
    text = text.replace('"${CALIB_N:-600}"', "600")
    copied = set()
    for line in text.splitlines():
        m = re.match(r'cp "\$run"/export/\{([^}]*)\} "\$dst"/$', line.strip())
        if m:
            copied |= set(m.group(1).split(","))
    export = {p.name for p in (ROOT / "checkpoints" / "builtin-vqa2" / "export").iterdir()}
    assert copied == export - {"seer.json"}
    dst = ROOT / "src" / "seer" / "assets" / "builtin-vqa"
    assert "dst=src/seer/assets/builtin-vqa\n" in text
    shipped = {p.name for p in dst.iterdir()}
    assert copied | {"seer.json", "generation_config.json", "MODEL_CARD.md"} == shipped
    lines = [
        shlex.split(x.strip().split(" |")[0])
        for x in text.splitlines()
        if x.strip().startswith("seer ")
    ]
    args = [build_parser().parse_args(a[1:]) for a in lines]
    calibrate = next(a for a in args if a.command == "calibrate")
    assert (calibrate.model, calibrate.data) == ("builtin-vqa", "builtin-vqa") and calibrate.write
    assert {a.command for a in args} >= {"calibrate", "demo"}
    release = (ROOT / "tools" / "release_builtin_vqa2.sh").read_text()
    assert 'RUN="$run" tools/ship_builtin_vqa2.sh' in release


def test_text_v2_release_phases_chain_at_their_until_steps():
    from training import builtin_v2 as train_v2

    args = phases("release_builtin_v2.sh", "python -m training.builtin_v2 ")
    cfgs = [trainer.parse_args(a, train_v2.TrainConfig, "x", Path("r"), 1.0)[1] for a in args]
    assert len(cfgs) >= 2 and cfgs[0].cycle_start == 0
    for before, after in zip(cfgs, cfgs[1:], strict=False):
        # a warm restart where the last phase stopped, or the same cycle with a longer horizon
        same_cycle = (after.cycle_start, after.lr) == (before.cycle_start, before.lr)
        assert after.cycle_start == before.until or (
            same_cycle and after.total_steps > before.total_steps
        )
    for c in cfgs[:-1]:
        assert c.cycle_start < c.until <= c.cycle_start + c.total_steps
    assert cfgs[-1].until == 0 or cfgs[-1].until > cfgs[-1].cycle_start  # the last may run on
    assert cfgs[0].bare_steps >= cfgs[0].until  # the first phase is all warm-up


def test_the_gpu_training_script_continues_the_text_runs_last_phase_on_cuda():
    """tools/train_gpu.sh (for a lent GPU) parses with the trainer's command line and runs the
    release script's last phase, only with the device and a larger batch."""
    from training import builtin_v2 as train_v2

    text = (ROOT / "tools" / "train_gpu.sh").read_text().replace("\\\n", " ")
    line = next(x.strip() for x in text.splitlines() if "-m training.builtin_v2" in x)
    line = line.split(" 2>&1")[0]
    for var, value in (('"$run"', "runs/x"), ('"${MINUTES:-5}"', "5"), ('"${BATCH:-256}"', "256")):
        line = line.replace(var, value)
    gpu = trainer.parse_args(shlex.split(line)[3:], train_v2.TrainConfig, "x", Path("r"), 1.0)[1]
    last = phases("release_builtin_v2.sh", "python -m training.builtin_v2 ")[-1]
    cpu = trainer.parse_args(last, train_v2.TrainConfig, "x", Path("r"), 1.0)[1]
    assert (gpu.device, gpu.batch_size) == ("cuda", 256)
    differ = {f for f in cpu.__slots__ if getattr(cpu, f) != getattr(gpu, f)}
    assert differ == {"device", "batch_size"}


def test_the_long_window_fine_tune_draws_each_batch_window_from_its_list():
    """`--long-windows 128,256,512` gives each batch one of those full windows (answers cut to
    it); without it the window is `--window` and the data stream draws nothing more, so the
    release phases replay as they were."""
    import random

    from training import builtin_v2 as train_v2

    c = train_v2.TrainConfig(long_windows="128,256,512")
    rng = random.Random(0)
    drawn = {train_v2.batch_window(c, rng) for _ in range(200)}
    assert drawn == {128, 256, 512}
    plain, rng = train_v2.TrainConfig(), random.Random(0)
    state = rng.getstate()
    assert train_v2.batch_window(plain, rng) == 128 and rng.getstate() == state


@pytest.mark.parametrize("bad", ["128,abc", "0,256", ","])
def test_a_bad_long_window_list_is_one_line_before_the_model_loads(bad, tmp_path):
    from training import builtin_v2 as train_v2

    argv = ["--out", str(tmp_path / "run"), "--long-windows", bad, "--minutes", "0"]
    with pytest.raises(SystemExit) as e:
        train_v2.main(argv)
    assert "--long-windows" in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "run").exists()  # nothing written


def test_full_windows_keep_the_row_recipes_draws_and_fill_every_window():
    """`--windows full` (the control model): every row's window is the full one, after the same
    random draws as the shipped "row" recipe, so the data stream that follows is the same; the
    shipped recipe cuts most rows to the answer plus a few [EOS]."""
    answers = [[1] * n for n in (3, 10, 40, 7, 20, 5, 12, 9)]
    row, full = random.Random(5), random.Random(5)
    cut = trainer.draw_windows(answers, 64, row, 0.3, "row")
    wins = trainer.draw_windows(answers, 64, full, 0.3, "full")
    assert wins == [64] * len(answers) and min(cut) < 64
    assert row.getstate() == full.getstate()


def test_the_control_script_is_the_release_recipe_with_full_windows():
    """tools/train_builtin_control.sh: the release script's four phases (steps 1-4), the same
    flags each, only `--windows full` added and the last phase stopped at release 2's step."""
    from training import builtin_v2 as train_v2

    text = (ROOT / "tools" / "train_builtin_control.sh").read_text().replace("\\\n", " ")
    helper = re.search(r"train\(\) \{ (.*?) \"\$@\"; \}", text).group(1)
    control = []
    for line in text.splitlines():
        m = re.match(r"phase (\d+) (.*)", line.strip())
        if m:
            head = helper.replace('"${MINUTES:-1000}"', "1000").replace('"$threads"', "1")
            argv = head + f" {m.group(2)} --until {m.group(1)}"
            control.append(shlex.split(argv.replace('"$run"', "runs/x"))[3:])
    shipped = phases("release_builtin_v2.sh", "python -m training.builtin_v2 ")
    assert len(control) == len(shipped) == 4
    parse = lambda a: trainer.parse_args(a, train_v2.TrainConfig, "x", Path("r"), 1.0)[1]  # noqa: E731
    for mine, theirs in zip(map(parse, control), map(parse, shipped), strict=True):
        assert mine.windows == "full" and theirs.windows == "row"
        differ = {f for f in mine.__slots__ if getattr(mine, f) != getattr(theirs, f)}
        assert differ <= {"windows", "until"}
        assert mine.until == (theirs.until or 40108)
    assert "checkpoints/builtin-v2-control" in text


def test_the_committed_vqa_export_carries_the_shipped_seer_settings():
    """checkpoints/builtin-vqa2/export holds the shipped `builtin-vqa` weights; its seer.json is
    the shipped, calibrated one (a stale copy would load other Seer settings from the run
    folder than from the package)."""
    import hashlib
    import json

    export = ROOT / "checkpoints" / "builtin-vqa2" / "export"
    shipped = ROOT / "src" / "seer" / "assets" / "builtin-vqa"
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    assert digest(export / "model.safetensors") == digest(shipped / "model.safetensors")
    mine = json.loads((export / "seer.json").read_text())
    assert mine == json.loads((shipped / "seer.json").read_text())
    assert mine["config"]["fallback"] > 0 and "calibration" in mine
