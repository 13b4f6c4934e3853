"""What the lm-eval and lmms-eval adapters share: model arguments, loading, sampling, batches.

Model arguments arrive as strings from the harnesses' `--model_args k=v,...` (the harness
converts numbers and booleans). `HarnessOptions.from_args` validates them once and raises a
`SeerError` naming the bad one. Requests are answered by the step-level engine
(`seer.engine.Engine.generate`, at most `batch_size` rows at once). Sampling parameters come
from `DiffusionLM.sampling`, so an unset option takes the same default as `seer generate`.

Other `SamplingParams` fields are model arguments too (`remasking`, `cfg_scale`,
`confidence_eos_eot_inf`, `schedule`, ...); they override what a task's generation arguments say.

The answer window of a generation request: `gen_length` from the model arguments when given,
else the task's `max_gen_toks`, else the model's default. The answer is then cut to
`max_gen_toks` tokens (the harness's limit) and at the first of the task's stop strings.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from seer.engine.config import DEFAULTS as ENGINE
from seer.errors import SeerError
from seer.sampling import SamplingParams
from seer.spec import check, check_type, implied, kind, specs

if TYPE_CHECKING:
    from seer.engine.inputs import SeerOption
    from seer.lm import DiffusionLM

CHUNK = 256  # requests handed to one engine run (the progress bar moves between them)
# the Monte-Carlo draws' seed when no `seed` is given (the official eval's `set_seed(1234)`): a
# loglikelihood is then what the official function returns; sampling stays unseeded, as in the
# library (`SamplingParams.seed`'s default)
MC_SEED = 1234
# SamplingParams fields -> (field, spec): every scalar option is a model argument (token-id
# fields, stop/suffix/banned_ids, cannot be spelled in `--model_args`)
SAMPLING = {f.name: (f, s) for f, s in specs(SamplingParams) if kind(f) is not None}


def _default(name: str) -> Any:
    """`SamplingParams`' default of option `name`."""
    default = SAMPLING[name][0].default
    if default is MISSING:
        raise TypeError(f"SamplingParams.{name} has no plain default")
    return default


@dataclass(slots=True)
class HarnessOptions:
    """The `--model_args` of model `seer` (both harnesses)."""

    pretrained: str = "builtin"  # a model folder, or a built-in model's name
    seer: SeerOption = None  # Seer's truncation: None off, True on, or a dict of options
    gen_length: int | None = None  # answer window (default: max_gen_toks, else the model's)
    dtype: str | None = None  # float32 | bfloat16 | float16 (default: the checkpoint's)
    device: str = "cpu"  # cpu | cuda | cuda:N
    batch_size: int = ENGINE["max_batch"]  # generation requests per batch (the engine's max_batch)
    mc_num: int = 128  # loglikelihood: Monte-Carlo samples per request (the official default)
    mc_batch: int | None = None  # loglikelihood: samples per forward (default: min(mc_num, 32))
    cfg: float = 0.0  # loglikelihood: classifier-free guidance scale
    check_greedy: bool = False  # loglikelihood: compute is_greedy (one more decode per request)
    seed: int | None = _default("seed")  # seeds sampling and the Monte-Carlo draws
    # (None: sampling unseeded, as in the library; the draws from MC_SEED)
    sampling: dict = field(default_factory=dict)  # other SamplingParams fields given as model
    # arguments (steps, block_length, cache, remasking, cfg_scale, schedule, ...), checked as
    # the library checks them: over the task's

    @classmethod
    def from_args(cls, **kwargs) -> HarnessOptions:
        names = {f.name for f in fields(cls)} - {"sampling"}
        extra = set(SAMPLING) - names
        seer_opts = {k[5:]: v for k, v in kwargs.items() if k.startswith("seer_")}
        unknown = sorted(k for k in kwargs if k not in names | extra and not k.startswith("seer_"))
        if unknown:
            raise SeerError(
                f"unknown model argument(s) {', '.join(unknown)} for model seer; known: "
                f"{', '.join(sorted(names))}, seer_<option> (a Seer setting, e.g. seer_signal) "
                f"and the sampling options {', '.join(sorted(extra))}"
            )
        given = {k: _sampling_arg(k, v) for k, v in kwargs.items() if k in extra and v is not None}
        kwargs = {k: v for k, v in kwargs.items() if k in names and v is not None}
        if str(kwargs.get("batch_size", "")).startswith("auto"):  # lm-eval's auto / auto:N
            kwargs.pop("batch_size")
        sampling = implied(SamplingParams, given)
        opts = cls(**kwargs, sampling=sampling)
        opts.seer = _seer_value(opts.seer, {k: _scalar(v) for k, v in seer_opts.items()})
        for name in ("batch_size", "mc_num", "mc_batch"):
            value = _scalar(getattr(opts, name))  # the harness CLIs pass --batch_size as text
            if value is not None and (not isinstance(value, int) or value < 1):
                raise SeerError(f"model argument {name} must be a positive integer, got {value!r}")
            setattr(opts, name, value)
        if opts.gen_length is not None:
            opts.gen_length = _sampling_arg("gen_length", opts.gen_length)
        opts.cfg, opts.seed = float(_scalar(opts.cfg)), _scalar(opts.seed)
        opts.check_greedy = _scalar(opts.check_greedy)
        if not isinstance(opts.check_greedy, bool):
            raise SeerError(
                f"model argument check_greedy must be true or false, got {opts.check_greedy!r}"
            )
        if opts.seed is not None and not isinstance(opts.seed, int):
            raise SeerError(f"model argument seed must be an integer, got {opts.seed!r}")
        check("seed", SAMPLING["seed"][1], opts.seed)
        if opts.mc_batch is None:
            opts.mc_batch = min(opts.mc_num, 32)
        if opts.mc_num % opts.mc_batch:
            raise SeerError(
                f"mc_num ({opts.mc_num}) must be a multiple of mc_batch ({opts.mc_batch})"
            )
        return opts

    @property
    def mc_samples_per_forward(self) -> int:
        """`mc_batch` (`from_args` fills in its default, min(mc_num, 32))."""
        return min(self.mc_num, 32) if self.mc_batch is None else self.mc_batch

    @property
    def mc_seed(self) -> int:
        """The seed of each request's Monte-Carlo draws (`seed`, else `MC_SEED`)."""
        return MC_SEED if self.seed is None else self.seed

    def load(self):
        """The model: a folder, or a shipped model by name (builtin, builtin-vqa, ...)."""
        import seer

        return seer.load(self.pretrained, dtype=self.dtype, device=self.device)


def _sampling_arg(name: str, value):
    """A sampling option given as a model argument, as its type, checked as the library
    checks it (the same one line as `seer generate` and the server give)."""
    f, spec = SAMPLING[name]
    value = _scalar(value)
    check_type(f, value, "bad generation option: ")
    check(name, spec, value)
    return value


def _scalar(value):
    """A model argument given as text ("8", "0.5", "true") as the number or flag it spells."""
    if not isinstance(value, str):
        return value
    low = value.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for k in (int, float):
        try:
            return k(low)
        except ValueError:
            pass
    return value


def _seer_value(value: object, options: dict[str, Any]) -> SeerOption:
    """`seer=` as the library takes it: None, True, or a dict of SeerConfig options."""
    if isinstance(value, str):
        low = value.lower()
        if low in ("true", "1", "yes", "on"):
            value = True
        elif low in ("false", "0", "no", "off", "none", ""):
            value = False
        else:  # a signal name: seer=eos_prob
            options = {"signal": value, **options}
            value = True
    if value not in (None, True, False) and not isinstance(value, dict):
        raise SeerError(f"model argument seer must be true/false or a signal name, got {value!r}")
    if options:
        return dict(options)
    return True if value is True else None


def request_params(
    lm: DiffusionLM, opts: HarnessOptions, gen_kwargs: dict
) -> tuple[SamplingParams, int]:
    """(sampling parameters, max answer tokens) of one generation request's `gen_kwargs`."""
    max_toks = gen_kwargs.get("max_gen_toks")
    if max_toks is not None and (not isinstance(max_toks, int) or max_toks < 1):
        raise SeerError(f"max_gen_toks must be a positive integer, got {max_toks!r}")
    temperature = None
    if gen_kwargs.get("do_sample"):
        temperature = gen_kwargs.get("temperature")
    elif "do_sample" in gen_kwargs or gen_kwargs.get("temperature") == 0:
        temperature = 0.0  # the task asks for greedy decoding
    gen_length, block = opts.gen_length or max_toks, opts.sampling.get("block_length")
    if gen_length and block and gen_length % block:
        gen_length += block - gen_length % block  # whole blocks
    options = dict(gen_length=gen_length, temperature=temperature, seed=opts.seed)
    p = lm.sampling(**(options | opts.sampling))
    return p, min(max_toks or p.gen_length, p.gen_length)


def cut_at_stops(text: str, until) -> str:
    """`text` up to the first occurrence of any stop string."""
    if isinstance(until, str):
        until = [until]
    for stop in until or ():
        if stop:
            text = text.split(stop, 1)[0]
    return text


def answer_text(lm: DiffusionLM, result, max_tokens: int, until) -> str:
    """An engine result's answer, at most `max_tokens` tokens, cut at the stop strings."""
    n = min(result.tokens, max_tokens)
    text = result.text if n == result.tokens else lm.decode(result.token_ids[:n])
    return cut_at_stops(text, until)


def run_engine(lm: DiffusionLM, opts: HarnessOptions, requests: list) -> list:
    """`Engine.generate` on one engine per call: at most `batch_size` rows run at once."""
    from seer.engine import Engine, EngineConfig

    return Engine(lm, EngineConfig(max_batch=opts.batch_size)).generate(requests)
