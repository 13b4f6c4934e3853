"""LaViDa (jacklishufan/LaViDa): a LLaDA or Dream language model with the LLaVA-NeXT vision path.

`LavidaLLaDA` / `LavidaDream` are Seer's LLaDA / Dream models with the vision modules added under
the LM's inner `model` (keys `model.vision_tower.vision_tower.vision_model.*`,
`model.mm_projector.*`, `model.image_newline`), so a released checkpoint loads with strict key
matching. LaViDa average-pools every tile's feature grid 2x2 after the projector (its
`get_2dPool`, on by default in the released code).

`LlavaProcessor` builds a request's prompt as LaViDa's `predict.py` does: the conversation
template (system prompt, then the user turn "<image>\\n" + question, through the tokenizer's
chat template), LLaVA's `tokenizer_image_token` (the text around "<image>" tokenized chunk by
chunk), then the image features spliced where "<image>" was. The result is a `PromptInput` whose
`embeds` the denoising loop feeds instead of the prompt's token embeddings.
"""

from __future__ import annotations

import torch

from seer.errors import SeerError
from seer.models.dream import DreamConfig, DreamModel
from seer.models.image_processor import ImageProcessor
from seer.models.llada import LLaDAConfig, LLaDAModelLM
from seer.models.multimodal import PromptInput
from seer.models.vision import VisionConfig, VisionEncoder, attach_vision

IMAGE_TOKEN = "<image>"  # LLaVA's DEFAULT_IMAGE_TOKEN
LAVIDA_SYSTEM = (
    "You are a helpful language and vision assistant. You are able to understand the visual "
    "content that the user provides, and assist the user with a variety of tasks using natural "
    "language."
)  # LaViDa's conversation templates ("llada", "dream")
LAVIDA_POOL = 2  # LaViDa pools each tile's grid 2x2 (get_2dPool, stride 2)


class LavidaLLaDA(LLaDAModelLM):
    """LaViDa-LLaDA (`LlavaLladaForMaskedDiffusion`)."""

    def __init__(self, cfg: LLaDAConfig) -> None:
        super().__init__(cfg)
        vcfg = VisionConfig.from_dict(cfg.extra, pool_stride=LAVIDA_POOL)
        self.vision = attach_vision(self.model, vcfg, cfg.d_model)


class LavidaDream(DreamModel):
    """LaViDa-Dream (`LlavaDreamForMaskedDiffusion`)."""

    def __init__(self, cfg: DreamConfig) -> None:
        super().__init__(cfg)
        vcfg = VisionConfig.from_dict(cfg.extra, pool_stride=LAVIDA_POOL)
        self.vision = attach_vision(self.model, vcfg, cfg.hidden_size)


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
        from seer.models.vision import IMAGE_TOKEN_INDEX

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
        from seer.models.vision import IMAGE_TOKEN_INDEX

        ids = self.token_ids(self.prompt_text(text, image is not None, chat))
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
    from seer.models.vision import IMAGE_TOKEN_INDEX

    at = ids.index(IMAGE_TOKEN_INDEX)
    embed = model.get_input_embeddings()
    dev = embed.weight.device
    before = embed(torch.tensor(ids[:at], dtype=torch.long, device=dev))
    after = embed(torch.tensor(ids[at + 1 :], dtype=torch.long, device=dev))
    embeds = torch.cat([before, features.to(before), after])  # (P, D)
    filler = int(getattr(model.config, "pad_token_id", None) or 0)
    return PromptInput(ids[:at] + [filler] * features.shape[0] + ids[at + 1 :], embeds)
