"""MMaDA (Gen-Verse/MMaDA-8B-Base, -8B-MixCoT): LLaDA with image tokens in its vocabulary.

Model: `MMadaModelLM` is the official LLaDA model class unchanged (`models/modeling_mmada.py`
subclasses `LLaDAModelLM` and adds only samplers), so `MMaDAModelLM` here is Seer's `LLaDAModelLM`
with the same checkpoint keys (`model.transformer.*`, no extra tensors). Its vocabulary is the
text vocabulary padded to `llm_vocab_size` (126464) plus `codebook_size` (8192) image codes:
`vocab_size = embedding_size = new_vocab_size` (134656), for the embedding and the LM head.

Config: the official `MMadaConfig` is a `PretrainedConfig` that keeps LLaDA-8B's fields and adds
the `model.mmada` section of MMaDA's training YAML (`train_mmada.py` merges the two):
`llm_vocab_size`, `new_vocab_size`, `codebook_size`, `num_vq_tokens`, `num_new_special_tokens`,
`w_clip_vit`, `tie_word_embeddings` (plus paths, kept in `extra`). There is no nested LLM config.

Prompt (`MMaDAProcessor`, the framing of `inference_mmu.py`):

    [<|mmu|>, <|soi|>, image codes + len(tokenizer), <|eoi|>, chat-template(question)]

The image codes come from MAGVIT-v2 (`seer.models.magvit`) on the image preprocessed at the
model's resolution. The official code takes `<|soi|>` / `<|eoi|>` / `<|mmu|>` from a table of
LLaDA-8B's literal ids (`training/prompting_utils.py`: 126084, 126085, 126089). In LLaDA's
tokenizer these ids are the reserved slots `<|reserved_token_0|>`, `_1|>`, `_5|>`, so Seer reads
the ids from the tokenizer: by the names `<|soi|>` ... if the tokenizer has them, else by those
slot names. The image-code offset is `len(tokenizer)` (126349 for LLaDA's tokenizer), as in the
official scripts. Without an image the prompt is the chat template alone (MMaDA's text chat).

Resolution: MMaDA's inference configs preprocess at 512 px (the value is in the YAML, not in the
checkpoint). Seer takes, in order: `seer.json` `"image_resolution"`, else
sqrt(`num_vq_tokens`) x the VQ's downsampling (32 x 16 = 512), else 512.

VQ folder (`load_vq_model`): the checkpoint's `seer.json` key `"vq_model"` (a path relative to
the checkpoint folder), else its subfolder `vq_model/`. Both hold showlab/magvitv2's files.

Generation: `mmu_generate` is LLaDA's `generate` (same blocks, schedule, low-confidence top-k).
Two differences: the confidence softmax is taken in float64 (LLaDA's `generate.py` uses the
logits' dtype; `MMaDAModelLM.confidence_dtype` tells the loop), and its unused `eot_token`.
`mmu_generate_fast` also stops after a block when every row's last token of that block is
`eot_token`; that only saves forwards once the answer has ended (later blocks would be decoded
otherwise), so Seer does not copy it: its boundary truncation covers that case.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

from seer.errors import CheckpointError, SeerError
from seer.models.defaults import SeerSettings
from seer.models.llada import LLaDAConfig, LLaDAModelLM
from seer.models.magvit import MagvitV2, load_magvit, preprocess
from seer.models.multimodal import PromptInput
from seer.models.tokens import IMAGE_TOKEN, image_marks

DEFAULT_RESOLUTION = 512  # configs/mmada_demo.yaml dataset.preprocessing.resolution
VQ_SUBFOLDER = "vq_model"
# MMaDA's task/image tokens and the LLaDA tokenizer slots its literal ids point at
# (training/prompting_utils.py reserved_token_mapping: 126084 + k = <|reserved_token_k|>).
SPECIAL_SLOTS = {"<|soi|>": 0, "<|eoi|>": 1, "<|mmu|>": 5}


@dataclass(slots=True)
class MMaDAConfig(LLaDAConfig):
    """LLaDA's config.json fields plus MMaDA's (see the module docstring)."""

    llm_vocab_size: int | None = None  # text rows of the embedding (126464)
    new_vocab_size: int | None = None  # text rows + image codes (134656)
    codebook_size: int | None = None  # MAGVIT-v2 codes (8192)
    num_vq_tokens: int | None = None  # image codes per image (1024 at 512 px)
    num_new_special_tokens: int = 0  # tokens added after the text vocabulary (0: reserved slots)
    w_clip_vit: bool = False  # CLIP-ViT features instead of VQ codes (not released; unsupported)

    def validate(self) -> None:
        LLaDAConfig.validate(self)
        if self.w_clip_vit:
            raise ValueError("MMaDA config w_clip_vit=True (CLIP image features) is not supported")
        if self.new_vocab_size is not None and self.num_embeddings < self.new_vocab_size:
            raise ValueError(
                f"MMaDA config: embedding_size {self.num_embeddings} < new_vocab_size "
                f"{self.new_vocab_size}"
            )


class MMaDAModelLM(LLaDAModelLM):
    """MMaDA's LM: LLaDA's modules and keys over the joint text + image-code vocabulary."""

    config: MMaDAConfig
    confidence_dtype = torch.float64  # mmu_generate: softmax(logits.to(torch.float64))
    image_codes = True  # images enter as MAGVIT-v2 codes after the text vocabulary
    # MMaDA's README runs inference_mmu.py with configs/mmada_demo.yaml: mmu_generate(input_ids,
    # max_new_tokens=max_seq_length (512), steps=512 // 2, block_length=512 // 4), greedy
    official_defaults = {
        "gen_length": 512,
        "steps": 256,
        "block_length": 128,
        "temperature": 0.0,
        "remasking": "low_confidence",
    }


def find_vq_folder(checkpoint: str | Path) -> Path | None:
    """The VQ folder of a checkpoint (see the module docstring), or None when it has none."""
    folder = Path(checkpoint)
    vq = SeerSettings.read(folder).vq_model  # confined to the checkpoint folder
    if vq is not None:
        if not vq.is_dir():
            raise CheckpointError(f"{folder / 'seer.json'}: vq_model {str(vq)!r} is not a folder")
        return vq
    sub = folder / VQ_SUBFOLDER
    return sub if sub.is_dir() else None


def load_vq_model(checkpoint_folder: str | Path, dtype=None, device="cpu") -> MagvitV2:
    """The MAGVIT-v2 tokenizer that goes with an MMaDA checkpoint (a `MagvitV2`)."""
    import torch

    path = find_vq_folder(checkpoint_folder)
    if path is None:
        raise CheckpointError(
            f"{checkpoint_folder} has no image tokenizer: put showlab/magvitv2's files in "
            f"{VQ_SUBFOLDER}/ or name their folder in seer.json as "
            '{"vq_model": "relative/path"}'
        )
    return load_magvit(path, dtype=dtype or torch.float32, device=device)


def special_token_ids(tokenizer) -> dict[str, int]:
    """Ids of <|soi|>, <|eoi|>, <|mmu|>: by name, else by LLaDA's reserved slot names."""
    vocab = tokenizer.get_vocab()
    ids = {}
    for name, slot in SPECIAL_SLOTS.items():
        alias = f"<|reserved_token_{slot}|>"
        found = vocab.get(name, vocab.get(alias))
        if found is None:
            raise CheckpointError(
                f"the tokenizer has neither {name} nor {alias}; is it MMaDA's (LLaDA's) tokenizer?"
            )
        ids[name] = int(found)
    return ids


def image_resolution(
    config: MMaDAConfig, vq: MagvitV2 | None, seer: SeerSettings | None = None
) -> int:
    """Preprocessing size: seer.json, else from num_vq_tokens and the VQ, else 512."""
    if seer is not None and seer.image_resolution:
        return seer.image_resolution
    n = config.num_vq_tokens
    if n and vq is not None:
        side = math.isqrt(n)
        if side * side != n:
            raise CheckpointError(f"num_vq_tokens {n} is not a square number of codes")
        return side * vq.config.downsample
    return DEFAULT_RESOLUTION


class MMaDAProcessor:
    """MMaDA's multimodal prompt: `__call__(text, image, chat)` -> `PromptInput` (ids only)."""

    accepts_images = True

    def __init__(
        self,
        tokenizer,
        vq_model: MagvitV2 | None,
        config: MMaDAConfig,
        resolution: int | None = None,
        squash: bool = False,
        missing_vq: str = "",
    ) -> None:
        self.tokenizer = tokenizer
        self.vq = vq_model
        self.config = config
        self.resolution = resolution or image_resolution(config, vq_model)
        self.squash = squash  # image_transform_squash instead of resize + centre crop
        self.special = special_token_ids(tokenizer)
        self.offset = len(tokenizer)  # image code c has id offset + c (inference_mmu.py)
        self._missing_vq = missing_vq  # why vq_model is None, told when an image arrives
        if vq_model is not None:
            top = self.offset + vq_model.config.codebook_size
            if top > config.num_embeddings:
                raise CheckpointError(
                    f"image codes reach id {top - 1}, beyond the model's {config.num_embeddings}"
                    " embeddings; is this the tokenizer and VQ model of this checkpoint?"
                )

    @classmethod
    def from_folder(cls, folder: str | Path, tokenizer, config: MMaDAConfig) -> MMaDAProcessor:
        """Finds the VQ model of a checkpoint; without one, text prompts still work."""
        seer = SeerSettings.read(Path(folder))
        try:
            vq, why = load_vq_model(folder), ""
        except CheckpointError as e:
            if find_vq_folder(folder) is not None:
                raise  # a VQ folder is there but broken: say so now
            vq, why = None, str(e)
        res = image_resolution(config, vq, seer)
        return cls(tokenizer, vq, config, resolution=res, missing_vq=why)

    def text_ids(self, text: str, chat: bool) -> list[int]:
        from seer.models.tokens import chat_ids, plain_ids

        if chat:
            return chat_ids(self.tokenizer, text)
        return plain_ids(self.tokenizer, text, prompt=True)

    def image_ids(self, image) -> list[int]:
        if self.vq is None:
            raise CheckpointError(self._missing_vq or "this MMaDA processor has no VQ model")
        pixels = preprocess(image, self.resolution, squash=self.squash)[None]  # (1, 3, R, R)
        device = next(self.vq.parameters()).device
        codes = self.vq.encode(pixels.to(device))[0]  # (N,)
        return (codes + self.offset).tolist()

    def __call__(self, text: str, image, chat: bool = True) -> PromptInput:
        # MMaDA's format puts the image codes before the prompt: an `<image>` placeholder (one
        # per image, as for the LLaVA models) is taken out, not read as text
        if image_marks(text, int(image is not None)):
            text = text.replace(f"{IMAGE_TOKEN}\n", "", 1).replace(IMAGE_TOKEN, "", 1)
        if not text.strip():
            raise SeerError("empty prompt: give some text")
        ids = self.text_ids(text, chat)
        if image is not None:
            s = self.special
            ids = [s["<|mmu|>"], s["<|soi|>"], *self.image_ids(image), s["<|eoi|>"], *ids]
        return PromptInput(ids=ids, embeds=None)
