"""`seer` command line, run in-process through `seer.cli.main(argv)`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import seer
from seer.cli import main

PROMPT = "repeat star 3 times"


@pytest.fixture(scope="module", params=["llada", "dream"])
def model_dir(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param) / "model"
    assert main(["make-checkpoint", "--arch", request.param, "--out", str(out)]) == 0
    return out


def _user_error(capsys, argv: list[str], *words: str) -> str:
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    # Seer's notices (one "Seer: ..." line each) and what loads may come first; the error is
    # one line, last
    lines = [line for line in err.splitlines() if not line.startswith(("Seer", "loading "))]
    assert len(lines) == 1, err
    assert lines[0].startswith("seer: error: ") and err.splitlines()[-1] == lines[0]
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0]
    return lines[0]


def test_make_checkpoint_writes_a_loadable_folder(tmp_path, capsys):
    out = tmp_path / "ckpt"
    args = ["make-checkpoint", "--arch", "dream", "--out", str(out), "--layers", "1"]
    assert main([*args, "--width", "32"]) == 0
    stdout = capsys.readouterr().out
    assert f"wrote a random dream checkpoint to {out}" in stdout
    for f in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        assert (out / f).is_file(), f
    raw = json.loads((out / "config.json").read_text())
    assert raw["model_type"] == "Dream"
    assert raw["num_hidden_layers"] == 1 and raw["hidden_size"] == 32
    lm = seer.load(out)
    assert type(lm.model).__name__ == "DreamModel"


def test_generate_prints_the_answer_and_a_stats_line(model_dir, capsys):
    argv = ["generate", "--model", str(model_dir), "--prompt", PROMPT, "--gen-length", "16"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    want = seer.load(model_dir).generate(PROMPT, gen_length=16)
    assert out == want.text + "\n"
    stats = [x for x in err.strip().splitlines() if not x.startswith("loading ")]
    assert len(stats) == 1, err
    m = re.fullmatch(r"\[(\d+) NFE, [\d.]+ s, (\d+) tokens, [\d.]+ tok/s\]", stats[0])
    assert m, stats[0]
    assert int(m.group(1)) == 16 and int(m.group(2)) == want.stats.tokens


def test_generate_json(model_dir, capsys):
    argv = ["generate", "--model", str(model_dir), "--prompt", PROMPT, "--gen-length", "16"]
    assert main([*argv, "--steps", "8", "--json"]) == 0
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert isinstance(record, dict)
    assert {"answer", "nfe", "seconds", "tokens"} <= set(record)
    want = seer.load(model_dir).generate(PROMPT, gen_length=16, steps=8)
    assert record["answer"] == want.text
    assert record["nfe"] == 8
    assert record["tokens"] == want.stats.tokens
    assert isinstance(record["seconds"], float) and record["seconds"] >= 0
    assert record["token_ids"] == want.token_ids


def test_generate_options_reach_the_sampler(model_dir, capsys):
    base = ["generate", "--model", str(model_dir), "--prompt", PROMPT, "--gen-length", "16"]
    base += ["--json", "--temperature", "0.8"]
    runs = []
    for seed in ("1", "1", "2", "3"):
        assert main([*base, "--seed", seed]) == 0
        runs.append(json.loads(capsys.readouterr().out)["token_ids"])
    assert runs[0] == runs[1]
    assert runs[0] != runs[2] or runs[0] != runs[3]
    assert main([*base, "--block-length", "4", "--steps", "4"]) == 0
    assert json.loads(capsys.readouterr().out)["nfe"] == 4


def test_missing_folder(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    _user_error(capsys, ["generate", "--model", str(missing), "--prompt", PROMPT], "nowhere")


def test_bad_block_length(model_dir, capsys):
    argv = ["generate", "--model", str(model_dir), "--prompt", PROMPT]
    _user_error(capsys, [*argv, "--gen-length", "16", "--block-length", "5"], "block_length")


@pytest.mark.parametrize(
    ("extra", "word"),
    [
        (["--gen-length", "16", "--block-length", "4", "--steps", "6"], "steps"),
        (["--gen-length", "0"], "--gen-length"),
        (["--gen-length", "600"], "context"),
        (["--dtype", "float8"], "dtype"),
        (["--remasking", "entropy", "--cfg-scale", "1"], "cfg_scale"),
        (["--top-p", "1.5"], "--top-p"),
    ],
)
def test_other_user_errors(model_dir, capsys, extra, word):
    argv = ["generate", "--model", str(model_dir), "--prompt", PROMPT]
    _user_error(capsys, [*argv, *extra], word)


def test_folder_without_config(tmp_path, capsys):
    _user_error(capsys, ["generate", "--model", str(tmp_path), "--prompt", PROMPT], "config.json")


@pytest.mark.parametrize(
    "extra", [["--gen-length", "abc"], ["--remasking", "greedy"], ["--cache", "full"]]
)
def test_argparse_errors_are_one_line(model_dir, capsys, extra):
    argv = ["generate", "--model", str(model_dir), "--prompt", PROMPT, *extra]
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("seer: error:"), err


def test_bad_device(model_dir, capsys):
    argv = ["generate", "--model", str(model_dir), "--prompt", PROMPT, "--gen-length", "8"]
    _user_error(capsys, [*argv, "--device", "nonsense"], "device")


@pytest.mark.parametrize("cache", ["prefix", "dual"])
def test_generate_with_a_kv_cache(model_dir, capsys, cache):
    argv = ["generate", "--model", str(model_dir), "--prompt", PROMPT, "--gen-length", "16"]
    argv += ["--block-length", "4", "--cache", cache, "--json"]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    lm = seer.load(model_dir)
    want = lm.generate(PROMPT, gen_length=16, block_length=4, cache=cache)
    assert record["token_ids"] == want.token_ids


def test_generate_and_profile_take_an_image(tmp_path, capsys):
    from PIL import Image

    from seer.cli import main
    from seer.models.factory import make_random_checkpoint

    folder = make_random_checkpoint("lavida-llada", tmp_path / "m", layers=4)
    Image.new("RGB", (30, 20), (200, 0, 0)).save(tmp_path / "red.png")
    args = ["--model", str(folder), "--prompt", "what colour", "--image", str(tmp_path / "red.png")]
    assert main(["generate", *args, "--gen-length", "8", "--steps", "4", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["gen_length"] == 8 and len(record["token_ids"]) == 8
    png = tmp_path / "p.png"
    assert main(["profile", *args, "--gen-length", "8", "--out", str(png), "--no-generate"]) == 0
    assert png.is_file()
    assert main(["generate", *args[:4], "--image", str(tmp_path / "missing.png")]) == 2
    assert "does not exist" in capsys.readouterr().err


# -- start-up, option errors, the shared option groups ------------------------------------------
def _fresh_python(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(seer.__file__).parents[1])}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["generate", "--help"],
        ["generate", "--model", "m", "--prompt", "hi", "--gen-length", "0"],
        ["calibrate", "--n", "0"],
        ["demo", "--bogus"],
        ["ui", "--help"],
        ["ui", "--port", "-1"],
    ],
)
def test_help_and_option_errors_import_neither_torch_nor_transformers(argv):
    code = (
        f"import sys\nfrom seer.cli import main\nrc = main({argv!r})\n"
        "heavy = [m for m in ('torch', 'transformers', 'matplotlib') if m in sys.modules]\n"
        "print(rc, heavy)"
    )
    run = _fresh_python(code)
    rc, heavy = run.stdout.splitlines()[-1].split(" ", 1)
    assert heavy == "[]", run.stdout
    assert rc == ("0" if "--help" in argv else "2")
    if rc == "2":
        assert run.stderr.count("\n") == 1 and run.stderr.startswith("seer: error: ")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["calibrate", "--n", "0"], ("--n", ">= 1")),
        (["bench", "--batches", "8", "0"], ("--batches",)),
        (["bench", "--tau-pad", "2"], ("--tau-pad", "<= 1")),
        (["generate", "--model", "m", "--prompt", "hi", "--steps", "-3"], ("--steps",)),
        (["generate", "--model", "m", "--prompt", "hi", "--temperature", "nan"], ("finite",)),
        (["generate", "--model", "m", "--prompt", "hi", "--seer-layer", "-1"], ("--seer-layer",)),
        (["generate", "--model", "m", "--prompt", "hi", "--seer-growth", "1"], ("--seer-growth",)),
        (["make-checkpoint", "--out", "x", "--layers", "0"], ("--layers",)),
        (["generate", "--model", "m", "--prompt", "a\udcffb"], ("UTF-8",)),
        (["generate", "--model", "m", "--prompt", "hi", "--stop", "\udcff"], ("UTF-8",)),
    ],
)
def test_out_of_range_options_and_non_utf8_prompts_are_one_line(capsys, argv, words):
    _user_error(capsys, argv, *words)


def test_seer_flags_become_the_seer_argument():
    from seer.cli import build_parser
    from seer.commands import options

    def parse(*extra):
        return build_parser().parse_args(["generate", "--model", "m", "--prompt", "p", *extra])

    assert options.seer(parse()) is None
    assert options.seer(parse("--seer")) is True
    args = parse("--seer-layer", "1", "--seer-signal", "eos_prob", "--no-seer-guard")
    assert options.seer(args) == {"layer": 1, "signal": "eos_prob", "guard": False}
    # every SeerConfig field has a flag, and every flag names a field
    from dataclasses import fields

    from seer.boundary.config import SIGNALS, SeerConfig
    from seer.boundary.probe import TENSORS

    flagged = {f for _, f, _, _ in options.SEER_FLAGS} | {"guard", "cut_in_step0"}
    assert flagged == {f.name for f in fields(SeerConfig)}
    helps = {f: h for _, f, _, h in options.SEER_FLAGS}
    assert all(s in helps["signal"] for s in SIGNALS) and all(t in helps["tensor"] for t in TENSORS)


def test_the_cli_invents_no_sampling_defaults():
    from seer.cli import build_parser
    from seer.commands import options

    args = build_parser().parse_args(["generate", "--model", "m", "--prompt", "p"])
    assert options.sampling(args) == {}
    args = build_parser().parse_args(["generate", "--model", "m", "--prompt", "p", "--steps", "4"])
    assert options.sampling(args) == {"steps": 4}


def test_make_checkpoint_help_lists_the_factorys_architectures():
    from seer.commands.make_checkpoint import ARCHS_HELP
    from seer.models.factory import ARCHS

    assert all(a in ARCHS_HELP for a in ARCHS)


@pytest.mark.parametrize("command", ["batch", "calibrate"])
def test_data_help_lists_every_builtin_source(command, capsys, monkeypatch):
    """The built-in sources are written out in the help (importing `seer.data` for them would
    slow every `seer --help`): the list must follow `seer.data.builtin.SOURCES`."""
    from seer.data.builtin import SOURCES

    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps at hyphens otherwise
    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert all(f"{name} " in text or f"{name}," in text for name in SOURCES)


def test_generate_with_seer_settings_on_a_two_layer_model(model_dir, capsys):
    argv = ["generate", "--model", str(model_dir), "--prompt", PROMPT, "--gen-length", "16"]
    assert main([*argv, "--seer-layer", "1", "--seer-signal", "sparsity", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    lm = seer.load(model_dir)
    want = lm.generate(PROMPT, gen_length=16, seer={"layer": 1, "signal": "sparsity"})
    assert record["token_ids"] == want.token_ids and record["window"] == want.stats.window


def test_paths_that_cannot_be_written_are_one_line(tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    _user_error(capsys, ["make-checkpoint", "--out", str(a_file)], str(a_file))
    _user_error(capsys, ["make-checkpoint", "--out", str(a_file / "sub")], "a-file")
    _user_error(capsys, ["make-checkpoint", "--out", "x", "--width", "100000"], "--width")


def test_profile_to_an_unwritable_path_is_one_line(model_dir, tmp_path, capsys):
    (tmp_path / "a-file").write_text("x")
    argv = ["profile", "--model", str(model_dir), "--prompt", PROMPT, "--gen-length", "8"]
    argv += ["--seer-layer", "1", "--no-generate", "--out", str(tmp_path / "a-file" / "p.png")]
    _user_error(capsys, argv, "p.png")


def test_a_seed_beyond_64_bits_is_one_line(model_dir, capsys):
    argv = ["generate", "--model", str(model_dir), "--prompt", PROMPT, "--gen-length", "8"]
    _user_error(capsys, [*argv, "--seed", str(2**70)], "seed")


def test_a_reader_that_leaves_early_gets_no_traceback():
    # `seer ... | head -c 1`: the pipe closes while a command still writes (10 MB: past any
    # pipe buffer, so the write fails for certain)
    code = (
        "import sys, seer.cli as c; c._main = lambda a: print('x' * 10**7) or 0; "
        "sys.exit(c.main([]))"
    )
    cmd = f'{sys.executable} -c "{code}" | head -c 1 >/dev/null'
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
