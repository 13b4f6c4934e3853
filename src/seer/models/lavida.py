"""LaViDa (jacklishufan/LaViDa): a LLaDA or Dream language model with the LLaVA-NeXT vision path.

`LavidaLLaDA` / `LavidaDream` are Seer's LLaDA / Dream models with the vision modules added under
the LM's inner `model` (keys `model.vision_tower.vision_tower.vision_model.*`,
`model.mm_projector.*`, `model.image_newline`), so a released checkpoint loads with strict key
matching. LaViDa pools every tile's feature grid with stride 2 after the projector (its
`get_2dPool`, on by default in the released code; `mm_spatial_pool_mode` "bilinear" in the
released config, whatever `mm_spatial_pool_stride` says). Sizes come from the tower folder named
by `mm_vision_tower` (its config.json and preprocessor_config.json, see `loader.resolve_vision`),
where the official tower hard-codes SigLIP's 384 px.

`LlavaProcessor` builds a request's prompt as LaViDa's `predict.py` does: the conversation
template (system prompt, then the user turn "<image>\\n" + question, through the tokenizer's
chat template), LLaVA's `tokenizer_image_token` (the text around "<image>" tokenized chunk by
chunk), then the image features spliced where "<image>" was. The result is a `PromptInput` whose
`embeds` the denoising loop feeds instead of the prompt's token embeddings.

`official_sampling` translates the keyword arguments of LaViDa's `model.generate` (its LLaDA
sampler `llada/generate.py`, or Dream's `diffusion_generate`) into `SamplingParams` that give
the same tokens through Seer's loop: `prefix_lm=True` is the `prefix_lm` cache policy,
`schedule='shift'` the `shift` reveal schedule, and the step count follows the official
arithmetic (`step_per_block`, `step_ratio`). Checked token for token against goldens from the
official code (tests/models/test_lavida_golden.py).
"""

from __future__ import annotations

import torch

from seer.errors import SeerError
from seer.models.defaults import as_options
from seer.models.dream import LEGACY_TOP_K, DreamConfig, DreamModel, inherited_top_k
from seer.models.image_processor import ImageProcessor
from seer.models.llada import LLaDAConfig, LLaDAModelLM
from seer.models.multimodal import PromptInput
from seer.models.tokens import IMAGE_TOKEN, image_marks, warn_unknown
from seer.models.vision import IMAGE_TOKEN_INDEX, VisionConfig, VisionEncoder, attach_vision
from seer.sampling import SamplingParams

LAVIDA_SYSTEM = (
    "You are a helpful language and vision assistant. You are able to understand the visual "
    "content that the user provides, and assist the user with a variety of tasks using natural "
    "language."
)  # LaViDa's conversation templates ("llada", "dream")
LAVIDA_POOL = 2  # LaViDa pools each tile's grid with stride 2 (get_2dPool's default)


# LaViDa's README runs predict.py; its timed call (after a greedy warm-up) is
# model.generate(..., do_sample=False, temperature=0.1, max_new_tokens=64, block_length=64,
# step_ratio=0.5, prefix_lm=True, schedule='shift')  (32 steps)
PREDICT_PY = {
    "temperature": 0.1,
    "max_new_tokens": 64,
    "block_length": 64,
    "step_ratio": 0.5,
    "prefix_lm": True,
    "schedule": "shift",
}


class LavidaLLaDA(LLaDAModelLM):
    """LaViDa-LLaDA (`LlavaLladaForMaskedDiffusion`)."""

    resize_to_tokenizer = True  # load_pretrained_model(resize_embeddings=True) by default

    @classmethod
    def sampling_defaults(cls, raw: dict, tokenizer) -> dict:
        return as_options(official_sampling("llada", **PREDICT_PY))

    def __init__(self, cfg: LLaDAConfig) -> None:
        super().__init__(cfg)
        vcfg = VisionConfig.from_dict(cfg.extra, pool_stride=LAVIDA_POOL)
        self.vision = attach_vision(self.model, vcfg, cfg.d_model)


class LavidaDream(DreamModel):
    """LaViDa-Dream (`LlavaDreamForMaskedDiffusion`). LaViDa's README shows no Dream call: the
    defaults are its `generate`'s own (512 / 512 steps, temperature 0.2, top_p 0.95, entropy,
    alg_temp 0) with the top_k Dream's `diffusion_generate` inherits from the config."""

    resize_to_tokenizer = True  # load_pretrained_model(resize_embeddings=True) by default
    # LaViDa's Dream `_sample` ranks `confidence` of `logits[mask_index]` (the masked positions
    # alone, `torch.topk(confidence, n)`); the hub Dream ranks a full-length row with -inf
    compact_topk = True

    @classmethod
    def sampling_defaults(cls, raw: dict, tokenizer) -> dict:
        return as_options(official_sampling("dream", top_k=inherited_top_k(raw)))

    def __init__(self, cfg: DreamConfig) -> None:
        super().__init__(cfg)
        vcfg = VisionConfig.from_dict(cfg.extra, pool_stride=LAVIDA_POOL)
        self.vision = attach_vision(self.model, vcfg, cfg.hidden_size)
        # LaViDa's predict.py loads, then casts the whole model (`model.to(torch.bfloat16)`): the
        # rotary `inv_freq` buffers are rounded to bfloat16 with it (Dream's own README loads with
        # `torch_dtype` only, which keeps them float32)
        self.rotary.rounded_freqs = True


class LlavaProcessor:
    """Prompt processor of the LLaVA-style models (LaViDa, LLaDA-V): text + image -> embeds."""

    accepts_images = True

    def __init__(self, model, tokenizer, system: str | None = LAVIDA_SYSTEM) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.system = system
        self.vision: VisionEncoder = model.vision
        self.images = ImageProcessor(self.vision.cfg)

    def prompt_text(self, text: str, image: bool, chat: bool) -> str:
        """The prompt string before tokenization ("<image>" marks the image)."""
        user = f"{IMAGE_TOKEN}\n{text}" if image else text
        if not chat or not getattr(self.tokenizer, "chat_template", None):
            return user
        messages = [{"role": "system", "content": self.system}] if self.system else []
        messages.append({"role": "user", "content": user})
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )

    def token_ids(self, prompt: str) -> list[int]:
        """LLaVA's `tokenizer_image_token`: ids with `IMAGE_TOKEN_INDEX` at "<image>"."""
        chunks = [self.tokenizer(c)["input_ids"] for c in prompt.split(IMAGE_TOKEN)]
        bos = getattr(self.tokenizer, "bos_token_id", None)
        offset = int(bool(chunks and chunks[0] and chunks[0][0] == bos and bos is not None))
        ids = [chunks[0][0]] if offset else []
        for i, chunk in enumerate(chunks):
            if i:
                ids.extend(([IMAGE_TOKEN_INDEX] * (offset + 1))[offset:])
            ids.extend(chunk[offset:])
        return [int(t) for t in ids]

    @torch.inference_mode()
    def image_features(self, image) -> torch.Tensor:
        """(N, D) LM-width features of one PIL image."""
        tiles, size = self.images(image)
        return self.vision.features(tiles.to(self.device), size)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def __call__(self, text: str, image, chat: bool = True) -> PromptInput:
        marks = image_marks(text, int(image is not None))
        ids = self.token_ids(self.prompt_text(text, image is not None and not marks, chat))
        warn_unknown(self.tokenizer, text, ids)
        n_img = sum(t == IMAGE_TOKEN_INDEX for t in ids)
        if image is None:
            if n_img:
                raise SeerError(f"the prompt has {IMAGE_TOKEN} but no image was given")
            return PromptInput(ids)
        if n_img != 1:
            raise SeerError(f"give one {IMAGE_TOKEN} per image ({n_img} in the prompt)")
        return splice(self.model, ids, self.image_features(image))


@torch.inference_mode()
def splice(model, ids: list[int], features: torch.Tensor) -> PromptInput:
    """Token embeddings of `ids` with `features` (N, D) where the image placeholder is; the
    returned ids hold the tokenizer's pad id at the N image positions (never read)."""
    at = ids.index(IMAGE_TOKEN_INDEX)
    embed = model.get_input_embeddings()
    dev = embed.weight.device
    before = embed(torch.tensor(ids[:at], dtype=torch.long, device=dev))
    after = embed(torch.tensor(ids[at + 1 :], dtype=torch.long, device=dev))
    embeds = torch.cat([before, features.to(before), after])  # (P, D)
    filler = int(getattr(model.config, "pad_token_id", None) or 0)
    return PromptInput(ids[:at] + [filler] * features.shape[0] + ids[at + 1 :], embeds)


# keyword arguments the official samplers accept but that change nothing at temperature 0 / here
_IGNORED = {"do_sample", "num_beams", "use_cache", "tokenizer", "mask_id", "verbose", "modalities"}
DREAM_CONFIG_TOP_K = LEGACY_TOP_K  # transformers 4.x PretrainedConfig's legacy `top_k`, which
# Dream's `DreamGenerationConfig.from_model_config(model.config)` inherits unless top_k is passed


def official_sampling(backbone: str, **kw) -> SamplingParams:
    """`SamplingParams` equivalent to LaViDa's `model.generate(..., **kw)` for a backbone
    ("llada" or "dream"). Raises `SeerError` for official options Seer does not reproduce."""
    kw = {k: v for k, v in kw.items() if k not in _IGNORED}
    extra = {"cache": "prefix_lm" if kw.pop("prefix_lm", False) else "none"}
    extra["schedule"] = kw.pop("schedule", None)
    if extra["schedule"] not in (None, "shift"):
        raise SeerError(f"LaViDa schedule {extra['schedule']!r} is not supported (only 'shift')")
    ratio = kw.pop("step_ratio", None)
    if backbone == "llada":
        p = _llada_sampling(kw, ratio, extra)
    elif backbone == "dream":
        p = _dream_sampling(kw, ratio, extra)
    else:
        raise SeerError(f"unknown LaViDa backbone {backbone!r}; use 'llada' or 'dream'")
    if kw:
        raise SeerError(f"LaViDa generate option(s) {sorted(kw)} are not supported")
    return p


def _llada_sampling(kw: dict, ratio, extra: dict) -> SamplingParams:
    """llada/generate.py: steps = max_new_tokens (its `steps` argument is ignored), split over
    the blocks, then `step_per_block` (capped at the block) or `int(steps * step_ratio)`."""
    n = int(kw.pop("max_new_tokens", 128))
    block = int(kw.pop("block_length", 128))
    kw.pop("steps", None)
    kw.pop("top_p", None)  # accepted, unused by the LLaDA sampler
    if n % block:
        raise SeerError(f"max_new_tokens {n} is not a multiple of block_length {block}")
    blocks = n // block
    per_block = kw.pop("step_per_block", None)
    if per_block and ratio:
        raise SeerError("give step_per_block or step_ratio, not both (as the official code)")
    spb = min(int(per_block), block) if per_block else n // blocks
    if ratio:
        spb = int(spb * ratio)
    if kw.pop("cfg_scale", 0.0):
        raise SeerError("LaViDa's LLaDA sampler does not support cfg_scale")
    remasking = kw.pop("remasking", "low_confidence")
    if remasking not in ("low_confidence", "random"):
        raise SeerError(f"LaViDa remasking {remasking!r} is not supported")
    temperature = float(kw.pop("temperature", 0.0))
    return SamplingParams(
        gen_length=n,
        steps=max(1, spb) * blocks,
        block_length=block,
        temperature=temperature,
        remasking=remasking,
        **extra,
    )


def _dream_sampling(kw: dict, ratio, extra: dict) -> SamplingParams:
    """Dream's `diffusion_generate` through `LlavaDreamForMaskedDiffusion.generate` (defaults:
    512 / 512 steps, temperature 0.2, top_p 0.95, alg entropy; top_k 50 from the config)."""
    n = int(kw.pop("max_new_tokens", 512))
    steps = min(int(kw.pop("steps", 512)), n)
    kw.pop("block_length", None)  # accepted, unused by Dream's sampler
    kw.pop("step_per_block", None)
    if ratio is not None:
        if extra["schedule"] is None:  # the official loop then mixes two step counts
            raise SeerError("Dream's step_ratio is only supported together with schedule='shift'")
        steps = int(n * ratio)
    alg_temp = kw.pop("alg_temp", 0.0)
    return SamplingParams(
        gen_length=n,
        steps=max(1, steps),
        temperature=float(kw.pop("temperature", 0.2)),
        top_p=kw.pop("top_p", 0.95),
        top_k=kw.pop("top_k", DREAM_CONFIG_TOP_K),
        remasking=kw.pop("alg", "entropy"),
        alg_temp=alg_temp or None,
        eps=float(kw.pop("eps", 1e-3)),
        **extra,
    )
