"""The LLaVA-NeXT vision path shared by LaViDa and LLaDA-V: SigLIP tower, projector, anyres.

An image becomes a sequence of LM-width feature vectors in four stages, each as the official
LLaVA code (the one LaViDa and LLaDA-V build on) does it:

1. `ImageProcessor`: the image is tiled by `image_aspect_ratio` ("anyres" / "anyres_max_N":
   the best grid resolution from `image_grid_pinpoints`, resized and black-padded, cut into
   tower-sized tiles, after one whole-image tile resized to a square; "pad": expanded to a
   square in the mean colour; otherwise resized as is), and every tile goes through the SigLIP
   image processor (transformers' `SiglipImageProcessor`: resize, rescale, normalise).
2. `SiglipTower`: transformers' `SiglipVisionModel`, without its pooling head and with the layers
   after `mm_vision_select_layer` removed (LLaVA deletes them from the tower, so the released
   checkpoints do not hold them); the features are the last kept layer's hidden states.
3. The `mlp2x_gelu` projector (Linear, GELU, Linear) maps them to the LM width; LaViDa then
   pools each tile's grid with stride 2 (`pool_stride`; `mm_spatial_pool_mode`: "average" /
   "max" pool 2x2, "bilinear" resizes the s x s grid to ceil(s / 2)^2, 27 -> 14 in the release).
4. `merge`: the tiles' grids are laid out as one picture (`mm_patch_merge_type`): "flat"
   concatenates them; "spatial_unpad" removes the padding anyres added, shrinks the picture to at
   most N tiles' worth (`anyres_max_N`), appends the learned `image_newline` after every row, and
   puts the whole-image tile's features first.

Checkpoint keys, as published: `model.vision_tower.vision_tower.vision_model.*`,
`model.mm_projector.{0,2}.*`, `model.image_newline`.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import torch
import torch.nn.functional as F
from torch import nn

from seer.errors import CheckpointError

if TYPE_CHECKING:
    from transformers.models.siglip.modeling_siglip import SiglipEncoder, SiglipVisionEmbeddings

# google/siglip-so400m-patch14-384 (the tower LaViDa names) and siglip2-so400m-patch14-384 share
# this architecture; used when the checkpoint names a hub tower instead of a local folder.
SO400M: dict[str, Any] = dict(
    hidden_size=1152,
    intermediate_size=4304,
    num_hidden_layers=27,
    num_attention_heads=16,
    image_size=384,
    patch_size=14,
    layer_norm_eps=1e-6,
    hidden_act="gelu_pytorch_tanh",
)
IMAGE_TOKEN_INDEX = -200  # LLaVA's placeholder id for "<image>" in a tokenized prompt


@dataclass(slots=True)
class VisionConfig:
    """The vision fields of a LLaVA-style config.json (names as published)."""

    tower: dict  # SiglipVisionConfig fields of the *full* tower (before layers are removed)
    select_layer: int = -2  # mm_vision_select_layer: hidden state the features come from
    projector_type: str = "mlp2x_gelu"  # mm_projector_type
    mm_hidden_size: int = 1152  # tower width the projector takes
    aspect_ratio: str = "square"  # image_aspect_ratio: anyres | anyres_max_N | pad | square
    grid_pinpoints: object = None  # image_grid_pinpoints: list of [w, h] or its string forms
    merge_type: str = "flat"  # mm_patch_merge_type: flat | spatial | spatial_unpad | ...
    pool_stride: int = 1  # stride of the per-tile pool (LaViDa: 2; LLaVA-NeXT: 1 = none)
    pool_mode: str = "average"  # mm_spatial_pool_mode: average | max | bilinear
    processor: dict = field(default_factory=dict)  # preprocessor_config.json, if any

    @classmethod
    def from_dict(cls, raw: dict, pool_stride: int = 1) -> VisionConfig:
        tower: dict[str, Any] = dict(raw.get("vision_config") or SO400M)
        cfg = cls(
            tower=tower,
            select_layer=int(raw.get("mm_vision_select_layer", -2)),
            projector_type=str(raw.get("mm_projector_type", "mlp2x_gelu")),
            mm_hidden_size=int(raw.get("mm_hidden_size", tower["hidden_size"])),
            aspect_ratio=str(raw.get("image_aspect_ratio") or "square"),
            grid_pinpoints=raw.get("image_grid_pinpoints"),
            merge_type=str(raw.get("mm_patch_merge_type") or "flat"),
            pool_stride=pool_stride,
            pool_mode=str(raw.get("mm_spatial_pool_mode") or "average"),
            processor=dict(raw.get("image_processor") or {}),
        )
        cfg.validate()
        return cfg

    def validate(self) -> None:
        if self.projector_type != "mlp2x_gelu":
            raise CheckpointError(
                f"mm_projector_type {self.projector_type!r} is not supported (only mlp2x_gelu)"
            )
        if self.mm_hidden_size != int(self.tower["hidden_size"]):
            raise CheckpointError("mm_hidden_size differs from the vision tower's hidden_size")
        n = int(self.tower["num_hidden_layers"])
        if not -n <= self.select_layer < n:
            raise CheckpointError(f"mm_vision_select_layer {self.select_layer} out of range")
        if self.image_size < self.patch_size:  # 384 / 14 is fine: SigLIP keeps 27 x 27 patches
            raise CheckpointError("vision image_size is smaller than its patch_size")

    @property
    def kept_layers(self) -> int:  # tower layers up to the selected hidden state
        n = int(self.tower["num_hidden_layers"])
        return self.select_layer + n + 1 if self.select_layer < 0 else self.select_layer

    @property
    def image_size(self) -> int:
        return int(self.tower["image_size"])

    @property
    def patch_size(self) -> int:
        return int(self.tower["patch_size"])

    @property
    def max_tiles(self) -> int | None:  # N of anyres_max_N
        m = re.fullmatch(r"anyres_max_(\d+)", self.aspect_ratio)
        return int(m.group(1)) if m else None

    @property
    def anyres(self) -> bool:
        return self.aspect_ratio == "anyres" or self.max_tiles is not None


class _SiglipTransformer(Protocol):
    """The published `vision_model` level: transformers' SiglipVisionTransformer (4.x) or the
    flattened SiglipVisionModel (5.x); the parts the tower runs."""

    embeddings: SiglipVisionEmbeddings
    encoder: SiglipEncoder


class SiglipTower(nn.Module):
    """LLaVA's `SigLipVisionTower`: `.vision_tower.vision_model` is the SigLIP transformer."""

    def __init__(self, cfg: VisionConfig) -> None:
        super().__init__()
        from transformers import SiglipVisionConfig, SiglipVisionModel

        fields = {k: v for k, v in cfg.tower.items() if k not in ("model_type", "architectures")}
        # LLaVA's own `SigLipAttention` (LaViDa, LLaDA-V): matmul, softmax in float32 cast back,
        # matmul -- transformers' "eager"; SDPA rounds otherwise in bfloat16
        fields.update(num_hidden_layers=cfg.kept_layers, vision_use_head=False)
        fields.update(attn_implementation="eager")
        model = SiglipVisionModel(SiglipVisionConfig(**fields))
        self.vision_tower: nn.Module
        if hasattr(model, "vision_model"):  # transformers 4.x keeps the inner transformer
            self.vision_tower = model
        else:  # 5.x flattened it: restore the published `vision_model.` level
            self.vision_tower = nn.Module()
            self.vision_tower.vision_model = model

    @property
    def vision_model(self) -> _SiglipTransformer:
        # a submodule attribute (registered above, either way), typed by what it is
        return cast(_SiglipTransformer, self.vision_tower.vision_model)

    @torch.no_grad()
    def init_buffers(self) -> None:
        """Refill SigLIP's non-persistent `position_ids` (garbage after `to_empty`)."""
        emb = self.vision_model.embeddings
        emb.position_ids.copy_(torch.arange(emb.position_ids.shape[-1]).expand_as(emb.position_ids))

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        """(T, 3, S, S) tiles -> (T, (S/patch)^2, C) features of the last kept layer."""
        vm = self.vision_model
        h = vm.embeddings(pixels.to(vm.embeddings.patch_embedding.weight.dtype))
        for layer in vm.encoder.layers:
            h = layer(h, None)
            h = h[0] if isinstance(h, tuple) else h
        return h


def attach_vision(owner: nn.Module, cfg: VisionConfig, hidden: int) -> VisionEncoder:
    """Add the tower, projector and newline to `owner` (the LM's inner `model`, so the keys are
    `model.vision_tower...`) and return the encoder that uses them."""
    owner.vision_tower = SiglipTower(cfg)
    owner.mm_projector = nn.Sequential(
        nn.Linear(cfg.mm_hidden_size, hidden), nn.GELU(), nn.Linear(hidden, hidden)
    )
    if "unpad" in cfg.merge_type:
        owner.image_newline = nn.Parameter(torch.empty(hidden))
    return VisionEncoder(cfg, owner)


class VisionEncoder:
    """Tower + projector (+ pool, merge): one image's tiles to LM-width features. Holds no
    parameters of its own: they live on `owner`, the LM's inner `model`."""

    def __init__(self, cfg: VisionConfig, owner: nn.Module) -> None:
        self.cfg = cfg
        self.owner = owner

    def features(self, tiles: torch.Tensor, image_size: tuple[int, int]) -> torch.Tensor:
        """(T, 3, S, S) tiles of one image of (width, height) -> (N, D) LM-width features."""
        return self.batch_features([tiles], [image_size])[0]

    def batch_features(
        self, tiles: list[torch.Tensor], sizes: list[tuple[int, int]]
    ) -> list[torch.Tensor]:
        """`features` of several images with one tower call (training, batched prompts)."""
        o, counts = self.owner, [t.shape[0] for t in tiles]
        tower, projector = o.get_submodule("vision_tower"), o.get_submodule("mm_projector")
        f = projector(tower(torch.cat(tiles)))  # (sum T, n, D)
        if self.cfg.pool_stride > 1:
            f = self._pool(f)
        newline = getattr(o, "image_newline", None)
        return [
            merge(part, size, self.cfg, newline)
            for part, size in zip(f.split(counts), sizes, strict=True)
        ]

    def _pool(self, f: torch.Tensor) -> torch.Tensor:
        t, n, d = f.shape
        side, s = math.isqrt(n), self.cfg.pool_stride
        g = f.view(t, side, side, d).permute(0, 3, 1, 2)
        mode = self.cfg.pool_mode
        if mode == "average":
            g = F.avg_pool2d(g, s)
        elif mode == "max":
            g = F.max_pool2d(g, s)
        elif mode == "bilinear":
            g = F.interpolate(g, size=[math.ceil(side / s)] * 2, mode="bilinear")
        else:
            raise CheckpointError(f"unknown mm_spatial_pool_mode {mode!r}")
        return g.permute(0, 2, 3, 1).reshape(t, -1, d)


def merge(f: torch.Tensor, image_size: tuple[int, int], cfg: VisionConfig, newline) -> torch.Tensor:
    """Lay out the tiles' features (T, n, D) as LLaVA-NeXT does; returns (N, D)."""
    if cfg.merge_type == "flat":
        return f.flatten(0, 1)
    if not cfg.merge_type.startswith("spatial"):
        raise CheckpointError(f"unknown mm_patch_merge_type {cfg.merge_type!r}")
    unpad = "unpad" in cfg.merge_type
    if f.shape[0] == 1:  # a single tile
        g = f[0]
        return torch.cat([g, newline[None].to(g)]) if unpad else g
    base, g = f[0], f[1:]
    side = math.isqrt(base.shape[0])
    if cfg.anyres:
        gw, gh = grid_shape(image_size, cfg)
    else:
        gw = gh = 2
    g = g.view(gh, gw, side, side, -1)
    if "maxpool2x2" in cfg.merge_type:
        g = g.permute(4, 0, 2, 1, 3).flatten(1, 2).flatten(2, 3)
        g = F.max_pool2d(g, 2).flatten(1, 2).transpose(0, 1)
    elif unpad:
        g = g.permute(4, 0, 2, 1, 3).flatten(1, 2).flatten(2, 3)  # (D, gh*side, gw*side)
        g = unpad_features(g, image_size)
        n = cfg.max_tiles
        if n is not None:
            c, h, w = g.shape
            times = math.sqrt(h * w / (n * side**2))
            if times > 1.1:
                size = [int(h // times), int(w // times)]
                g = F.interpolate(g[None], size, mode="bilinear")[0]
        g = torch.cat([g, newline[:, None, None].expand(*g.shape[:-1], 1).to(g)], dim=-1)
        g = g.flatten(1, 2).transpose(0, 1)
    else:
        g = g.permute(0, 2, 1, 3, 4).flatten(0, 3)
    return g if "nobase" in cfg.merge_type else torch.cat([base, g])


def unpad_features(t: torch.Tensor, image_size: tuple[int, int]) -> torch.Tensor:
    """Crop (C, H, W) features to the part that shows the image (anyres padded it)."""
    ow, oh = image_size
    h, w = t.shape[1:]
    if ow / oh > w / h:
        pad = (h - int(oh * (w / ow))) // 2
        return t[:, pad : h - pad, :]
    pad = (w - int(ow * (h / oh))) // 2
    return t[:, :, pad : w - pad]


def pinpoints(grid_pinpoints: object, side: int) -> list[tuple[int, int]]:
    """The candidate (width, height) resolutions of anyres tiling (`grid_pinpoints`: the config's
    image_grid_pinpoints, see `VisionConfig`)."""
    pp: Any = grid_pinpoints  # a JSON value: a list of [w, h] or one of its string forms
    if isinstance(pp, str) and "x" in pp:  # "(1x1),...,(6x6)": a range of grids of `side` tiles
        m = re.findall(r"\((\d+)x(\d+)\)", pp)
        (a0, a1), (b0, b1) = map(int, m[0]), map(int, m[-1])
        return [(i * side, j * side) for i in range(a0, b0 + 1) for j in range(a1, b1 + 1)]
    if isinstance(pp, str):
        pp = ast.literal_eval(pp)
    if not pp:
        raise CheckpointError("anyres needs image_grid_pinpoints in config.json")
    return [(int(w), int(h)) for w, h in pp]


def best_resolution(size: tuple[int, int], options: list[tuple[int, int]]) -> tuple[int, int]:
    """The option that shows most of the image at the least waste (LLaVA-NeXT's rule)."""
    ow, oh = size
    best, most, waste = options[0], 0, float("inf")
    for w, h in options:
        scale = min(w / ow, h / oh)
        shown = min(int(ow * scale) * int(oh * scale), ow * oh)
        wasted = w * h - shown
        if shown > most or (shown == most and wasted < waste):
            best, most, waste = (w, h), shown, wasted
    return best


def grid_shape(size: tuple[int, int], cfg: VisionConfig) -> tuple[int, int]:
    """(tiles across, tiles down) anyres uses for an image of `size` (width, height)."""
    w, h = best_resolution(size, pinpoints(cfg.grid_pinpoints, cfg.image_size))
    return w // cfg.image_size, h // cfg.image_size
