"""MAGVIT-v2 image tokenizer (showlab/magvitv2), the encoder + quantizer path MMaDA uses.

MMaDA understands an image as discrete tokens: MAGVIT-v2's convolutional encoder maps the
preprocessed image (3, R, R) in [-1, 1] to a (z_channels, R/16, R/16) latent, and the look-up-free
quantizer (LFQ) turns each latent vector into a code id by the signs of its channels:
`id = sum_c 2^(C-1-c) * [z_c > 0]` (channel 0 is the most significant bit; codebook 2^13 = 8192).
Ids are read row-major over the latent grid, so a 512 px image gives 32 x 32 = 1024 codes.

Only understanding is needed here, so this module has **no decoder**: the checkpoint's
`decoder.*` tensors are skipped explicitly by `load_magvit` (they are counted, not read), and
every other key must match exactly (strict). Module tree and parameter names are those of the
official `MAGVITv2` (`models/modeling_magvitv2.py`, blocks from taming-transformers):

    encoder.conv_in                                   3x3 conv, in_ch -> ch
    encoder.down.{i}.block.{j}.{norm1,conv1,norm2,conv2,nin_shortcut}   ResNet blocks
    encoder.down.{i}.attn.{j}.{norm,q,k,v,proj_out}  (levels whose nominal size is in
                                                       attn_resolutions; none in the release)
    encoder.down.{i}.downsample.conv                  stride-2 3x3 conv after right/bottom pad
    encoder.mid.{block_1,attn_1,block_2}, encoder.norm_out, encoder.conv_out, encoder.quant_conv
    quantize.embedding (2^C, C) +-1 codes, quantize.power_vals (C,)   (buffers; strict keys)

Norms are GroupNorm(32 groups, eps 1e-6), the non-linearity is swish. The attention level test
uses the *configured* `resolution` (256 in the release) halved per level, not the input size,
exactly like the official code.

Config: the released `config.json` holds only `_class_name` / `_diffusers_version` (the official
`MAGVITv2.__init__` takes no arguments), so every size defaults to the official one. Smaller
models (Seer's test fixtures) add Seer's optional sections `"encoder"` (VQGANEncoder's keyword
arguments) and `"quantize"` (`{"codebook_dim": C}`); `"decoder"` may be present and is ignored.

Preprocessing (`preprocess`) is MMaDA's `training/utils.py:image_transform`: bicubic resize of the
shorter side to R (torchvision's size rule), centre crop R x R (torchvision's rounding), scale to
[0, 1] by /255, then normalise with mean = std = 0.5 to [-1, 1]. `squash=True` is
`image_transform_squash` (resize straight to R x R), which `inference_mmu.py` uses for some
datasets' files.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from seer.errors import CheckpointError

WEIGHT_FILES = (
    "model.safetensors",
    "pytorch_model.safetensors",
    "diffusion_pytorch_model.safetensors",
)
IGNORED_PREFIX = "decoder."  # the image decoder: generation only, not built here
GROUPS = 32  # GroupNorm groups of the official `Normalize`


Z_CHANNELS = 13  # the release's latent channels (= LFQ bits)


@dataclass(slots=True)
class MagvitConfig:
    """Sizes of the MAGVIT-v2 encoder and quantizer; defaults are the released model's."""

    ch: int = 128  # base channel width
    ch_mult: list[int] = field(default_factory=lambda: [1, 2, 2, 4, 4])  # width per level
    num_res_blocks: list[int] = field(default_factory=lambda: [4, 3, 4, 3, 4])  # per level
    attn_resolutions: list[int] = field(default_factory=lambda: [5])  # nominal sizes with attn
    in_ch: int = 3  # image channels
    resolution: int = 256  # nominal input size (only decides where attention sits)
    z_channels: int = Z_CHANNELS  # latent channels = bits per code
    double_z: bool = False  # must be False (quant_conv takes z_channels)
    codebook_dim: int = Z_CHANNELS  # LFQ bits; codebook size 2^codebook_dim
    extra: dict = field(default_factory=dict)  # other fields of config.json, kept verbatim

    @classmethod
    def from_dict(cls, raw: dict) -> MagvitConfig:
        enc: dict[str, Any] = dict(raw.get("encoder") or {})  # config.json values
        names = {f.name for f in fields(cls)} - {"extra", "codebook_dim"}
        known: dict[str, Any] = {
            k: (list(v) if isinstance(v, list | tuple) else v) for k, v in enc.items()
        }
        known = {k: v for k, v in known.items() if k in names}
        quant: dict[str, Any] = raw.get("quantize") or {}
        z = known.get("z_channels", Z_CHANNELS)
        cfg = cls(**known, codebook_dim=int(quant.get("codebook_dim", z)), extra=dict(raw))
        cfg.validate()
        return cfg

    def validate(self) -> None:
        if len(self.ch_mult) != len(self.num_res_blocks) or not self.ch_mult:
            raise ValueError("MAGVIT config: ch_mult and num_res_blocks need the same length")
        if self.ch % GROUPS:
            raise ValueError(f"MAGVIT config: ch {self.ch} must be a multiple of {GROUPS}")
        if self.double_z:
            raise ValueError("MAGVIT config: double_z=True is not supported (quantizer input)")
        if self.codebook_dim != self.z_channels:
            raise ValueError(
                f"MAGVIT config: codebook_dim {self.codebook_dim} != z_channels {self.z_channels}"
            )

    @property
    def codebook_size(self) -> int:
        return 2**self.codebook_dim

    @property
    def downsample(self) -> int:
        """Pixels per latent position along each side (16 for the release)."""
        return 2 ** (len(self.ch_mult) - 1)


def _norm(c: int) -> nn.GroupNorm:
    return nn.GroupNorm(GROUPS, c, eps=1e-6, affine=True)


def _conv(cin: int, cout: int, k: int = 3, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, k, stride=stride, padding=(k // 2) if stride == 1 else 0)


class _ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.norm1, self.conv1 = _norm(cin), _conv(cin, cout)
        self.norm2, self.conv2 = _norm(cout), _conv(cout, cout)
        if cin != cout:
            self.nin_shortcut = _conv(cin, cout, k=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return (self.nin_shortcut(x) if hasattr(self, "nin_shortcut") else x) + h


class _Attn(nn.Module):
    """Single-head self-attention over the H*W positions, 1x1 conv projections."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.norm = _norm(c)
        self.q, self.k, self.v, self.proj_out = (_conv(c, c, k=1) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, hh, ww = x.shape
        h = self.norm(x)
        q = self.q(h).reshape(b, c, -1).transpose(1, 2)  # (B, HW, C)
        k = self.k(h).reshape(b, c, -1)  # (B, C, HW)
        w = torch.softmax(torch.bmm(q, k) * (c**-0.5), dim=2)  # (B, HW_q, HW_k)
        out = torch.bmm(self.v(h).reshape(b, c, -1), w.transpose(1, 2))  # (B, C, HW_q)
        return x + self.proj_out(out.reshape(b, c, hh, ww))


class _Downsample(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = _conv(c, c, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(F.pad(x, (0, 1, 0, 1)))  # pad right/bottom only, as the original


class _Level(nn.Module):
    def __init__(self, cin: int, cout: int, blocks: int, attn: bool, down: bool) -> None:
        super().__init__()
        self.block = nn.ModuleList(_ResBlock(cin if j == 0 else cout, cout) for j in range(blocks))
        self.attn = nn.ModuleList(_Attn(cout) for _ in range(blocks if attn else 0))
        if down:
            self.downsample = _Downsample(cout)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        for j, block in enumerate(self.block):
            h = block(h)
            if len(self.attn):
                h = self.attn[j](h)
        return self.downsample(h) if hasattr(self, "downsample") else h


class _Mid(nn.Module):
    """`encoder.mid.*`: block, attention, block at the lowest resolution."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.block_1, self.attn_1, self.block_2 = _ResBlock(c, c), _Attn(c), _ResBlock(c, c)


class MagvitEncoder(nn.Module):
    """(B, 3, R, R) pixels in [-1, 1] -> (B, z_channels, R/d, R/d) latent (after quant_conv)."""

    def __init__(self, cfg: MagvitConfig) -> None:
        super().__init__()
        self.conv_in = _conv(cfg.in_ch, cfg.ch)
        widths = [cfg.ch * m for m in [1, *cfg.ch_mult]]
        size, last = cfg.resolution, len(cfg.ch_mult) - 1
        self.down = nn.ModuleList()
        for i, blocks in enumerate(cfg.num_res_blocks):
            attn = size in cfg.attn_resolutions
            self.down.append(_Level(widths[i], widths[i + 1], blocks, attn, down=i != last))
            size = size // 2 if i != last else size
        c = widths[-1]
        self.mid = _Mid(c)
        self.norm_out = _norm(c)
        self.conv_out = _conv(c, cfg.z_channels)
        self.quant_conv = _conv(cfg.z_channels, cfg.z_channels, k=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv_in(x)
        for level in self.down:
            h = level(h)
        h = self.mid.block_2(self.mid.attn_1(self.mid.block_1(h)))
        return self.quant_conv(self.conv_out(F.silu(self.norm_out(h))))


class LookupFreeQuantizer(nn.Module):
    """Sign quantizer: a latent vector's code id is its channel signs read as binary digits."""

    embedding: torch.Tensor  # buffers (registered below)
    power_vals: torch.Tensor

    def __init__(self, dim: int) -> None:
        super().__init__()
        powers = 2 ** torch.arange(dim - 1, -1, -1)  # (C,) MSB first
        bits = (torch.arange(2**dim)[:, None] // powers) % 2  # (2^C, C)
        self.register_buffer("embedding", bits.float() * 2 - 1)  # the +-1 code vectors
        self.register_buffer("power_vals", powers)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        # z: (B, C, h, w) -> ids (B, h*w). The official code takes the signs of
        # z + (q - z) (its straight-through estimate); written the same way so that huge |z|,
        # where that sum rounds to 0, gives the same bit.
        q = torch.where(z > 0, 1.0, -1.0).to(z.dtype)
        bits = (z + (q - z)) > 0
        ids = (self.power_vals.view(1, -1, 1, 1) * bits).sum(1)  # (B, h, w)
        return ids.reshape(z.shape[0], -1).long()


class MagvitV2(nn.Module):
    """Image -> code ids. `encode(pixels)` (B, 3, R, R) in [-1, 1] -> (B, N) long ids."""

    def __init__(self, cfg: MagvitConfig) -> None:
        super().__init__()
        self.config = cfg
        self.encoder = MagvitEncoder(cfg)
        self.quantize = LookupFreeQuantizer(cfg.codebook_dim)

    @torch.no_grad()
    def encode(self, pixels: torch.Tensor) -> torch.Tensor:
        if pixels.dim() != 4 or pixels.shape[1] != self.config.in_ch:
            raise ValueError(
                f"pixels must be (B, {self.config.in_ch}, R, R); got {tuple(pixels.shape)}"
            )
        dtype = self.encoder.conv_in.weight.dtype
        return self.quantize(self.encoder(pixels.to(dtype)))

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.encode(pixels)


def preprocess(image, resolution: int, squash: bool = False) -> torch.Tensor:
    """PIL image -> (3, R, R) float32 in [-1, 1], as MMaDA's `image_transform` (see module doc)."""
    from PIL import Image

    image = image.convert("RGB")
    w, h = image.size
    if squash:
        size = (resolution, resolution)
    else:  # torchvision Resize(int): the shorter side becomes R, the longer one is truncated
        short, long = (w, h) if w <= h else (h, w)
        new_long = int(resolution * long / short)
        size = (resolution, new_long) if w <= h else (new_long, resolution)
    if size != (w, h):
        image = image.resize(size, Image.Resampling.BICUBIC)
    w, h = image.size
    if (w, h) != (resolution, resolution):  # torchvision CenterCrop (only when not squashed)
        if w < resolution or h < resolution:
            raise ValueError(f"image of {w}x{h} is smaller than the crop {resolution}")
        top, left = int(round((h - resolution) / 2.0)), int(round((w - resolution) / 2.0))
        image = image.crop((left, top, left + resolution, top + resolution))
    x = torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8)
    x = x.view(resolution, resolution, 3).permute(2, 0, 1).contiguous()  # (3, R, R)
    return x.float().div(255).sub(0.5).div(0.5)  # ToTensor, then Normalize(0.5, 0.5)


def load_magvit(folder: str | Path, dtype=torch.float32, device="cpu") -> MagvitV2:
    """A MAGVIT-v2 folder (config.json + safetensors) -> `MagvitV2` in eval mode.

    Every encoder / quantizer key must be present with its shape; `decoder.*` keys are skipped
    (this module has no decoder); any other key is an error.
    """
    import json
    import pickle

    from safetensors.torch import load_file

    from seer.models.tokens import first_line

    folder = Path(folder)
    cfg_file = folder / "config.json"
    if not cfg_file.is_file():
        raise CheckpointError(f"{folder} has no config.json; is it a MAGVIT-v2 (vq_model) folder?")
    try:
        cfg = MagvitConfig.from_dict(json.loads(cfg_file.read_text()))
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"{cfg_file}: {e}") from None
    found = [folder / n for n in WEIGHT_FILES if (folder / n).is_file()]
    found += sorted(folder.glob("*.bin"))  # showlab/magvitv2 may ship pytorch_model.bin
    if not found:
        raise CheckpointError(f"{folder} has none of {', '.join(WEIGHT_FILES)} or a .bin file")
    try:
        if found[0].suffix == ".bin":  # tensors only: weights_only refuses pickled code
            state = torch.load(found[0], map_location="cpu", weights_only=True)
            state = state.get("state_dict", state) if isinstance(state, dict) else state
        else:
            state = load_file(found[0])
    except pickle.UnpicklingError as e:
        if "weights only" not in str(e).lower():  # not a pickle at all
            raise CheckpointError(f"{found[0]} is not a weights file ({first_line(e)})") from None
        raise CheckpointError(  # weights_only met objects other than tensors
            f"{found[0]} holds pickled objects besides tensors, which Seer never unpickles; "
            "convert its tensors to model.safetensors"
        ) from None
    except Exception as e:  # a truncated or foreign file
        raise CheckpointError(
            f"{found[0]} is not a readable weights file ({first_line(e)})"
        ) from None
    state = {k: v for k, v in state.items() if not k.startswith(IGNORED_PREFIX)}
    model = MagvitV2(cfg)
    expected = model.state_dict()
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    bad = [k for k in expected if k in state and state[k].shape != expected[k].shape]
    if missing or unexpected or bad:
        raise CheckpointError(
            f"{found[0]}: keys do not match MAGVIT-v2 (missing {missing[:3]}, unexpected "
            f"{unexpected[:3]}, wrong shape {bad[:3]}); is config.json the one of these weights?"
        )
    model.load_state_dict(state, strict=True)
    return model.to(device=device, dtype=dtype).eval()
