"""One default per option: every front end's default of every engine and server option (and
the sampling seed) is the one its spec declares (`EngineConfig`, `ServerConfig`,
`SamplingParams`), and the web page's option fields show what the library uses for the model.
A front end that writes its own default fails here, naming itself."""

from __future__ import annotations

import inspect

import pytest

from seer.engine.config import EngineConfig
from seer.sampling import SamplingParams
from seer.serve.config import ServerConfig
from seer.spec import defaults, specs

ENGINE, SERVER = defaults(EngineConfig), defaults(ServerConfig)
SPEC = ENGINE | SERVER


def _args(*argv: str):
    from seer.cli import build_parser

    return build_parser().parse_args(list(argv))


def _signature(fn, *names: str) -> dict:
    params = inspect.signature(fn).parameters
    return {n: params[n].default for n in names}


def _command_defaults() -> dict:
    """What each subcommand passes on for the options the user did not give."""
    from seer.commands import options

    out = {}
    commands = {
        "seer serve": ["serve"],
        "seer ui": ["ui"],
        "seer batch": ["batch", "--model", "m", "--data", "d", "--out", "o.jsonl"],
        "seer bench": ["bench"],
    }
    for name, argv in commands.items():
        args = _args(*argv)
        engine = options.engine_options(args)
        server = options.server_config(args)
        for f, s in specs(EngineConfig):
            if s.flag and s.flag in _flags(argv[0]):
                out[(name, f.name)] = engine[f.name]
        for f, s in specs(ServerConfig):
            if s.flag and s.flag in _flags(argv[0]):
                out[(name, f.name)] = getattr(server, f.name)
    return out


def _flags(command: str) -> set[str]:
    from seer.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices[command]
    return {flag for action in sub._actions for flag in action.option_strings}


def front_end_defaults() -> dict:
    """(front end, option) -> the default that front end uses."""
    import seer.serve
    from seer import batch
    from seer.distributed import ray_batch, ray_serve
    from seer.harness.options import HarnessOptions
    from seer.serve import server
    from seer.serve.app import ServeOptions
    from seer.serve.prepare import Limits

    out = {("EngineConfig", k): v for k, v in ENGINE.items()}
    out |= {("ServerConfig", k): v for k, v in SERVER.items()}
    out |= _command_defaults()
    build = (
        "max_batch",
        "max_queue",
        "max_tokens_per_step",
        "max_image_bytes",
        "max_body_bytes",
        "max_image_pixels",
        "pixel_budget",
        "prepare_timeout",
        "chars_per_token",
    )
    for k, v in _signature(seer.serve.build, *build).items():
        out[("seer.serve.build", k)] = v
    listen = ("host", "port", "drain_timeout", "log_level")
    for k, v in _signature(seer.serve.serve, *listen).items():
        out[("seer.serve.serve", k)] = v
    for k, v in _signature(server.run, "drain_timeout", "log_level").items():
        out[("seer.serve.server.run", k)] = v
    limits = Limits()
    for k in (
        "max_image_bytes",
        "max_image_pixels",
        "pixel_budget",
        "prepare_timeout",
        "chars_per_token",
    ):
        out[("Limits", k)] = getattr(limits, k)
    out[("ServeOptions", "max_body_bytes")] = ServeOptions(model_names=("m",)).max_body_bytes
    for k, v in _signature(ray_serve.serve, *listen).items():
        out[("Ray Serve", k)] = v
    out[("Ray batch", "max_batch")] = _signature(ray_batch.batch, "max_batch")["max_batch"]
    out[("run_batch", "max_batch")] = _signature(batch.run_batch, "max_batch")["max_batch"]
    out[("answers", "max_batch")] = _signature(batch.answers, "max_batch")["max_batch"]
    out[("harness", "max_batch")] = HarnessOptions().batch_size
    return out


def test_every_front_end_takes_the_one_default_of_each_option():
    seen = front_end_defaults()
    wrong = [
        f"{where} {name} = {value!r}, its spec says {SPEC[name]!r}"
        for (where, name), value in seen.items()
        if value != SPEC[name]
    ]
    assert not wrong, "\n".join(wrong)
    # every option with a flag is seen in some subcommand, and the front ends cover them all
    flagged = {f.name for cls in (EngineConfig, ServerConfig) for f, s in specs(cls) if s.flag}
    assert flagged <= {name for where, name in seen if where.startswith("seer ")}


def test_the_harness_seed_is_the_librarys():
    """The harness leaves sampling unseeded by default, as the library does (its Monte-Carlo
    draws keep the official eval's seed, `MC_SEED`)."""
    from seer.harness.options import MC_SEED, HarnessOptions

    assert HarnessOptions().seed == SamplingParams.__dataclass_fields__["seed"].default
    assert HarnessOptions().mc_seed == MC_SEED and HarnessOptions(seed=7).mc_seed == 7


def test_a_flag_leaves_its_default_to_the_spec():
    """The parsers hold None for every engine / server flag (the spec's default applies), and
    a value given reaches the config."""
    from seer.commands import options

    args = _args("serve", "--max-batch", "3", "--max-body-mb", "1.5", "--port", "0")
    assert options.engine_options(args)["max_batch"] == 3
    cfg = options.server_config(args)
    assert (cfg.max_body_bytes, cfg.port, cfg.drain_timeout) == (3 << 19, 0, 60.0)
    assert all(getattr(_args("serve"), f.name, None) is None for f, _ in specs(ServerConfig))


@pytest.mark.parametrize(
    "kw, words",
    [
        (dict(max_batch=0), "max_batch must be >= 1, got 0"),
        (dict(max_tokens_per_step=0), "max_tokens_per_step must be >= 1 (or None for no budget)"),
        (dict(aging=0), "aging must be > 0 ticks, got 0"),
        (dict(policy="lifo"), "unknown policy 'lifo'; choose one of fcfs, shortest_first"),
        (dict(kernel="cuda"), "unknown kernel 'cuda'; choose one of reference, triton"),
        (dict(max_batch="8"), "max_batch must be an integer, got '8'"),
    ],
)
def test_the_engine_config_is_checked_from_its_spec(kw, words):
    from seer.errors import SeerError

    with pytest.raises(SeerError) as e:
        EngineConfig(**kw)
    assert words in str(e.value)


def test_the_server_config_is_checked_from_its_spec():
    from seer.errors import SeerError

    with pytest.raises(SeerError, match="port must be <= 65535, got 70000"):
        ServerConfig(port=70000)
    with pytest.raises(SeerError, match="unknown log level 'loud'"):
        ServerConfig(log_level="loud")


# -- the page (`seer ui`): its option fields are made from the specs ---------------------------
# where an option's None means "a value the model derives", the page shows the derived value
SHOWN = {
    "steps": lambda p: p.total_steps,
    "block_length": lambda p: p.block,
    "threshold": lambda p: p.threshold or 0,  # the page's 0: off
}


def _page_fields(lm) -> tuple[dict, list]:
    """(config class, option) -> the value its field shows, and the page's other inputs."""
    from seer.ui import page
    from seer.ui.widgets import option_of

    blocks = page.build(lm, None)  # no service: nothing runs
    run = next(f for f in blocks.fns.values() if f.fn.__name__ == "run")
    fields = {option_of(c): c.value for c in run.inputs if option_of(c) is not None}
    return fields, [c for c in run.inputs if option_of(c) is None]


def _without_seer_json(tmp_path):
    """The built-in model's folder without its seer.json (no per-model Seer settings)."""
    import shutil

    from seer.models.loader import model_folder

    folder = tmp_path / "plain"
    shutil.copytree(model_folder("builtin"), folder, ignore=shutil.ignore_patterns("seer.json"))
    return folder


def test_the_pages_fields_show_the_librarys_defaults(tmp_path):
    """Each option field of the page shows what the library uses for that model when the
    option is not given: the model's sampling defaults (`lm.sampling()`), and for a model
    without seer.json, Seer's own (`SeerConfig`'s spec defaults)."""
    pytest.importorskip("gradio", reason="the ui extra is not installed")
    import seer
    from seer.boundary.config import SeerConfig
    from seer.engine.request import seer_config as resolve

    lm = seer.load(str(_without_seer_json(tmp_path)))
    fields, own = _page_fields(lm)
    p, cfg = lm.sampling(), resolve(lm, True)
    library = {SamplingParams: p, SeerConfig: cfg}
    wrong = []
    for (cls, name), value in fields.items():
        shown = SHOWN.get(name) if cls is SamplingParams else None
        want = shown(p) if shown else getattr(library[cls], name)
        if value != want:
            wrong.append(f"the page's {cls.__name__}.{name} shows {value!r}, the library {want!r}")
        if cls is SeerConfig and value != defaults(SeerConfig)[name]:
            wrong.append(f"the page's Seer {name} shows {value!r}, its spec says otherwise")
    assert not wrong, "\n".join(wrong)
    assert {n for _, n in fields} == {
        "gen_length",
        "steps",
        "block_length",
        "threshold",
        "cache",
        "signal",
    }
    # the page's own controls (tokens per step, run baseline / Seer, the pause) name no option
    options = {f.name for cls in (SamplingParams, SeerConfig) for f, _ in specs(cls)}
    hand_made = [c.label for c in own if str(c.label).split(" (")[0] in options]
    assert not hand_made, f"option fields not made from their spec: {hand_made}"


def test_the_page_shows_the_models_seer_settings():
    """A model's seer.json sets the Seer defaults the page shows (the built-in model's signal
    is its calibrated end probability, not the spec's sparsity)."""
    pytest.importorskip("gradio", reason="the ui extra is not installed")
    import seer
    from seer.boundary.config import SeerConfig
    from seer.engine.request import seer_config as resolve

    lm = seer.load("builtin")
    fields, _ = _page_fields(lm)
    assert fields[(SeerConfig, "signal")] == resolve(lm, True).signal == "eos_prob"
    assert fields[(SamplingParams, "gen_length")] == lm.sampling().gen_length
