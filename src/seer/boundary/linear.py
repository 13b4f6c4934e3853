"""A third step-0 signal: a linear probe on one layer's hidden state, P(this position is padding).

At step 0 every answer position is [MASK]; the hidden state after block k (the residual stream)
at window position j already says much about whether j falls inside the answer or in the
padding after it. `LinearProbe` is a logistic regression on that state, fitted on a model's own
baseline answers: position j of a row counts as padding iff j >= the index of the row's first
end token (the end token itself counts as padding: a boundary at i keeps L* = i + 1 positions,
the end token included). The probe's profile, (B, W) probabilities, goes to the same
`ThresholdRule` as the end probability.

Fitting is plain torch, deterministic: features standardised over the training positions,
zero initial weights, L-BFGS with a strong-Wolfe line search (no randomness), the two classes
weighted equally (padding usually outnumbers the answer), an L2 penalty on the weights (not the
bias). The probe is stored as `seer_probe.safetensors` beside a model's seer.json (the layer
in its metadata), read with `LinearProbe.load`.

The hidden states come from the step-0 probe: `StepZeroProbe(layers=(), hidden=(k,))` attached
before step 0 and read after it (`probe.hidden_states(k)`, or `LinearProbe.read(probe)`), or
`probe.step0(lm, prompts, hidden=(k,)).hidden[k]` for a batch measured outside `generate`.

Measured, not shipped as a Seer signal: on the built-in text model (`python
tools/measure_linear_probe.py --n 48`, docs/results/linear_probe.txt) the probe at the last
layer separates answer from padding as well as the step-0 end probability (held-out AUC 0.9985
against 0.9980; no row cut at tau 0.9 over 2 positions, mean L* 26.6 against 26.4), and at
earlier layers, where it could cut inside step 0, it cuts more rows or keeps longer windows
(layer 3: 1 of 48 rows cut, mean L* 28.8). The end probability needs no fitting, so it is the
signal `seer calibrate` chooses from; this module stays for measuring the probe on other models.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from seer.errors import SeerError

FILE = "seer_probe.safetensors"  # beside seer.json in a model folder
KIND = "seer-linear-probe"  # the file's `format` metadata
VERSION = "1"


def padding_labels(ends, width: int) -> torch.Tensor:
    """(N, W) bool: position j of row n is padding iff j >= ends[n] (the index of the row's first
    end token in its baseline answer, = its answer length; >= W: no end token, no padding)."""
    ends = torch.as_tensor(list(ends), dtype=torch.long)
    return torch.arange(width)[None] >= ends[:, None]


def hidden_size(model) -> int:
    """The width d of `model`'s residual stream (its input embedding's)."""
    return model.get_input_embeddings().embedding_dim


@dataclass(slots=True)
class LinearProbe:
    """P(padding) = sigmoid(((h - mean) / std) . weight + bias) at each window position."""

    layer: int  # the block whose output hidden state is read
    weight: torch.Tensor  # (d,) float32, on standardised features
    bias: float  # the logit's offset
    mean: torch.Tensor  # (d,) float32 feature means of the training positions
    std: torch.Tensor  # (d,) float32 feature standard deviations (1 where constant)

    @property
    def hidden_size(self) -> int:
        return self.weight.shape[0]

    # -- fitting -----------------------------------------------------------------------------
    @classmethod
    def fit(
        cls,
        hidden: torch.Tensor,
        ends,
        layer: int,
        *,
        l2: float = 1e-3,
        max_iter: int = 200,
        dtype: torch.dtype = torch.float64,
    ) -> LinearProbe:
        """Fit on `hidden` (N, W, d), the step-0 hidden states of N rows at `layer`, and `ends`
        (N ints), each row's first end-token index in its full-window baseline answer.

        `l2`: the penalty on the standardised weights, l2 / 2 * |w|^2 added to the class-balanced
        mean log loss. The fit runs on the CPU in `dtype` (float64: N * W * d * 8 bytes)."""
        if hidden.dim() != 3:
            raise SeerError(f"hidden must be (rows, window, d), got shape {tuple(hidden.shape)}")
        n, w, d = hidden.shape
        ends = list(ends)
        if len(ends) != n:
            raise SeerError(f"{len(ends)} end indices for {n} rows of hidden states")
        if any(int(e) < 0 for e in ends):
            raise SeerError("end indices must be >= 0 (the answer length of each row)")
        if l2 < 0:
            raise SeerError(f"l2 must be >= 0, got {l2}")
        # outside inference mode (step0's states are inference tensors): autograd fits
        with torch.inference_mode(False), torch.enable_grad():
            y = padding_labels(ends, w).reshape(-1).to(dtype)  # (N * W,) 1 = padding
            pos = float(y.sum())
            if pos == 0 or pos == y.numel():
                kind = "padding" if pos else "answer"
                raise SeerError(f"cannot fit a linear probe: every position is {kind}")
            x = hidden.detach().to("cpu", dtype).reshape(-1, d)  # (N * W, d)
            mean, std = x.mean(0), x.std(0, correction=0)
            std = torch.where(std > 1e-6 * std.max().clamp(min=1e-12), std, torch.ones_like(std))
            x = (x - mean) / std  # a new (normal) tensor
            # class-balanced: each class weighs half of the loss
            sw = torch.where(y > 0, 0.5 / pos, 0.5 / (y.numel() - pos))
            weight, bias = _logistic(x, y, sw, l2, max_iter)
        f32 = torch.float32
        return cls(layer, weight.to(f32), float(bias), mean.to(f32), std.to(f32))

    # -- reading -----------------------------------------------------------------------------
    def profile(self, hidden: torch.Tensor) -> torch.Tensor:
        """(B, W, d) hidden states -> (B, W) float32 P(padding), on the states' device."""
        if hidden.shape[-1] != self.hidden_size:
            raise SeerError(
                f"the linear probe reads hidden states of size {self.hidden_size}, "
                f"got {hidden.shape[-1]}"
            )
        # standardisation folded into the weights: no (B, W, d) temporary
        w = (self.weight / self.std).to(hidden.device)
        b = self.bias - float((self.mean / self.std) @ self.weight)
        return torch.sigmoid(hidden.float() @ w + b)

    def read(self, probe) -> torch.Tensor:
        """(B, W) P(padding) from a `StepZeroProbe` that kept this probe's layer (`hidden`)."""
        return self.profile(probe.hidden_states(self.layer))

    def check(self, model) -> LinearProbe:
        """This probe fits `model`: its layer exists and its hidden size is the model's."""
        n, d = len(model.layers), hidden_size(model)
        if not 0 <= self.layer < n:
            raise SeerError(
                f"the linear probe reads layer {self.layer}, but the model has {n} layers"
            )
        if d != self.hidden_size:
            raise SeerError(
                f"the linear probe was fitted on hidden states of size {self.hidden_size}, but "
                f"the model's hidden size is {d}: fit it again on this model"
            )
        return self

    # -- storage -----------------------------------------------------------------------------
    def save(self, folder) -> Path:
        """Write `seer_probe.safetensors` into `folder` (beside seer.json); returns its path."""
        path = Path(folder) / FILE
        tensors = {
            "weight": self.weight.detach().to("cpu", torch.float32).contiguous(),
            "bias": torch.tensor([self.bias], dtype=torch.float32),
            "mean": self.mean.detach().to("cpu", torch.float32).contiguous(),
            "std": self.std.detach().to("cpu", torch.float32).contiguous(),
        }
        meta = {"format": KIND, "version": VERSION, "layer": str(self.layer)}
        save_file(tensors, str(path), metadata=meta)
        return path

    @classmethod
    def load(cls, folder, model=None) -> LinearProbe:
        """The probe stored in `folder` (checked against `model` when given: `check`)."""
        path = Path(folder) / FILE
        if not path.is_file():
            raise SeerError(f"no linear probe in {folder}: {FILE} is missing")
        try:
            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (not a dict)
        except (SafetensorError, OSError, ValueError) as e:
            reason = " ".join(str(e).split())
            raise SeerError(f"{path} is not a readable linear probe ({reason})") from None
        probe = cls._from(tensors, meta, path)
        return probe if model is None else probe.check(model)

    @classmethod
    def _from(cls, tensors: dict, meta: dict, path: Path) -> LinearProbe:
        def bad(why: str) -> SeerError:
            return SeerError(f"{path} is not a valid linear probe: {why}")

        if meta.get("format") != KIND:
            raise bad(f"its metadata names format {meta.get('format')!r}, not {KIND!r}")
        if not str(meta.get("layer", "")).isdigit():
            raise bad("its metadata names no layer")
        missing = {"weight", "bias", "mean", "std"} - tensors.keys()
        if missing:
            raise bad(f"it lacks {', '.join(sorted(missing))}")
        w, b, m, s = (tensors[k].float() for k in ("weight", "bias", "mean", "std"))
        if w.dim() != 1 or m.shape != w.shape or s.shape != w.shape or b.numel() != 1:
            raise bad("its weight, mean and std must be (d,) and its bias one number")
        if not all(bool(t.isfinite().all()) for t in (w, b, m, s)) or bool((s <= 0).any()):
            raise bad("it holds non-finite values or a std <= 0")
        return cls(int(meta["layer"]), w, float(b.reshape(())), m, s)


def _logistic(
    x: torch.Tensor, y: torch.Tensor, sw: torch.Tensor, l2: float, max_iter: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Weighted, L2-penalised logistic regression by L-BFGS from zero: x (M, d), y (M,) in
    {0, 1}, sw (M,) sample weights summing to 1 -> (weight (d,), bias ())."""
    d = x.shape[1]
    theta = torch.zeros(d + 1, dtype=x.dtype, requires_grad=True)  # [weight, bias]
    opt = torch.optim.LBFGS(
        [theta],
        lr=1,
        max_iter=max_iter,
        history_size=20,
        tolerance_grad=1e-9,
        tolerance_change=1e-12,
        line_search_fn="strong_wolfe",
    )

    def closure() -> torch.Tensor:
        opt.zero_grad()
        z = x @ theta[:d] + theta[d]
        loss = sw * torch.nn.functional.binary_cross_entropy_with_logits(z, y, reduction="none")
        loss = loss.sum() + 0.5 * l2 * theta[:d].pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    theta = theta.detach()
    if not bool(theta.isfinite().all()):
        raise SeerError("the linear probe's fit diverged (non-finite weights); raise l2")
    return theta[:d], theta[d]
