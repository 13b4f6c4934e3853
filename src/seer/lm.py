"""The public object `seer.load()` returns: model + tokenizer + `generate()`.

`generate` accepts text (chat-formatted with the tokenizer's template unless `chat=False`), a
list of token-id lists, a (B, L) id tensor with an optional attention mask (left padding),
`PromptInput`s from `DiffusionLM.prompt` (a prompt encoded once, image included, reused), and
for multimodal models one image per text prompt (`image=` a path, data URI, PIL image or array;
see `seer.images`). A multimodal model's prompt processor (`seer.models.multimodal`) builds its
prompts: ids, and input embeddings with the image features spliced in. It returns one
`Generation` per prompt with the answer text, the answer ids (always `gen_length` of them,
[EOS]-padded, as the official samplers return) and what the run cost. `stream` answers one
prompt as a generator of `StreamChunk`s, one per semi-autoregressive block as it becomes final
(mlx-lm's `stream_generate` is the model), ending with the same `Generation`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, overload

import torch

from seer.diffusion.loop import Canvas, DenoisingLoop, WindowPolicy, make_canvas
from seer.engine.inputs import Chat, ImageInput, Images, Prompt, Prompts, SeerOption
from seer.engine.prompts import encode, prompt_input, prompt_inputs  # the methods' bodies
from seer.engine.request import (
    Deltas,
    GenerationStats,
    PartialResult,
    RequestResult,
    StreamChunk,
    defaults,
    process,
    single,
)
from seer.errors import CheckpointError, SeerError
from seer.models import loader
from seer.models import tokens as tokenizing
from seer.models.defaults import ModelDefaults, SeerSettings
from seer.models.multimodal import PromptInput
from seer.sampling import SamplingParams, TokenIds
from seer.threads import choose as choose_threads

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from seer.diffusion.graphs import GraphCache
    from seer.models.base import DiffusionModel
    from seer.models.multimodal import PromptProcessor

Generation = RequestResult  # the one result type: `generate` is a front over the engine
__all__ = ["DiffusionLM", "Generation", "GenerationStats", "StreamChunk", "load"]


class DiffusionLM:
    """A loaded diffusion language model. Build it with `seer.load(path)`."""

    def __init__(
        self,
        model: DiffusionModel,
        tokenizer: PreTrainedTokenizerBase | None,
        tokens: TokenIds,
        name: str = "",
        meta: dict[str, Any] | None = None,
        processor: PromptProcessor | None = None,
        defaults: ModelDefaults | None = None,
        path: Path | None = None,
    ) -> None:
        self.model = model
        self.path = path  # the folder it was loaded from (None: built in memory)
        self.tokenizer = tokenizer
        self.tokens = tokens
        self.name = name
        self.meta = meta or {}  # seer.json as read (prefer `defaults.seer`, its typed form)
        self.processor = processor  # PromptProcessor of a multimodal model, else None
        if defaults is None:  # a model built in memory: its family's official call
            raw_config: dict[str, Any] = {}
            defaults = ModelDefaults.build(type(model).sampling_defaults(raw_config, tokenizer))
        self.defaults = defaults  # the model's defaults, read once by the loader
        self.loop = DenoisingLoop(model, tokens)
        self._graphs: GraphCache | None = None  # CUDA graphs of the static path (`graph_cache`)

    def sampling(self, **options: Any) -> SamplingParams:
        """The model's default `SamplingParams` with `options` over them (None: the default).

        The one way every front end (generate, the CLI, the engine, the server) builds its
        params, so the same options give the same answer everywhere: the input processor's
        `seer.engine.request.defaults`."""
        return defaults(self, **options)  # the processor lays them

    @property
    def multimodal(self) -> bool:
        return self.processor is not None and self.processor.accepts_images

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def default_rule(self) -> str:
        return self.model.default_rule

    @property
    def max_length(self) -> int:
        return self.model.context_length

    # -- prompts (the input processor's: `seer.engine.prompts`) ------------------------------
    def encode(self, prompt: str, chat: bool = True) -> list[int]:
        """The ids of one text prompt (the chat template unless `chat=False`)."""
        return encode(self, prompt, chat)

    def prompt(self, text: str, image: ImageInput | None = None, chat: bool = True) -> PromptInput:
        """One request's prompt: ids (and embeddings, for models that splice images)."""
        return prompt_input(self, text, image, chat)

    def canvas(
        self,
        prompts: Prompts,
        p: SamplingParams,
        images: Images = None,
        chat: bool = True,
        attention_mask: torch.Tensor | None = None,
    ) -> Canvas:
        """The canvas of a batch: checked prompts (with their images) + gen_length [MASK]s.

        `prompts` may also be `PromptInput`s made by `prompt()` (one, or a list): a prompt
        encoded once (image features included) can then be answered many times."""
        inputs = self.prompt_inputs(prompts, p, images, chat, attention_mask)
        embeds = [q.embeds for q in inputs]
        emb = self.model.get_input_embeddings()
        ids = [q.ids for q in inputs]
        return make_canvas(ids, p.gen_length, self.tokens, self.device, embeds, emb)

    def prompt_inputs(
        self,
        prompts: Prompts,
        p: SamplingParams,
        images: Images = None,
        chat: bool = True,
        attention_mask: torch.Tensor | None = None,
    ) -> list[PromptInput]:
        """The batch's prompts, encoded (images spliced in) and checked against the model."""
        return prompt_inputs(self, prompts, p, images, chat, attention_mask)

    # -- generation ---------------------------------------------------------------------------
    @overload
    def generate(
        self,
        prompts: str | Chat | list[int] | PromptInput,
        params: SamplingParams | None = None,
        *,
        seer: SeerOption = None,
        image: ImageInput | None = None,
        chat: bool = True,
        attention_mask: torch.Tensor | None = None,
        policy: WindowPolicy | None = None,
        **overrides: Any,
    ) -> Generation: ...

    @overload
    def generate(
        self,
        prompts: list[str] | list[Chat] | list[list[int]] | list[torch.Tensor] | list[PromptInput],
        params: SamplingParams | None = None,
        *,
        seer: SeerOption = None,
        image: Images = None,
        chat: bool = True,
        attention_mask: torch.Tensor | None = None,
        policy: WindowPolicy | None = None,
        **overrides: Any,
    ) -> list[Generation]: ...

    @overload
    def generate(
        self,
        prompts: torch.Tensor,
        params: SamplingParams | None = None,
        *,
        seer: SeerOption = None,
        image: Images = None,
        chat: bool = True,
        attention_mask: torch.Tensor | None = None,
        policy: WindowPolicy | None = None,
        **overrides: Any,
    ) -> Generation | list[Generation]: ...

    def generate(
        self,
        prompts: Prompts,
        params: SamplingParams | None = None,
        *,
        seer: SeerOption = None,
        image: Images = None,
        chat: bool = True,
        attention_mask: torch.Tensor | None = None,
        policy: WindowPolicy | None = None,
        **overrides: Any,
    ) -> Generation | list[Generation]:
        """Answer one prompt (returns a `Generation`) or a list/batch (returns a list).

        A thin front over the engine: the prompts are submitted together (one step 0, where Seer
        cuts each row's window) and run until all are done, each row routed by its window and
        leaving as soon as it is complete. `params` or keyword overrides (gen_length=...,
        steps=..., ...) set the sampling; `seer=SeerConfig(...)` (or True for the model's
        defaults) turns on boundary truncation.
        `image`: one image for a single prompt, or a list with one image (or None) per prompt.
        """
        requests = process(
            self,
            prompts,
            params,
            seer=seer,
            image=image,
            chat=chat,
            attention_mask=attention_mask,
            policy=policy is not None,
            **overrides,
        )
        from seer.engine import Engine, EngineConfig

        engine = Engine(self, EngineConfig(max_batch=len(requests)))
        out = engine.generate(requests, policy=policy)
        return out[0] if single(prompts) else out

    def stream(
        self,
        prompt: Prompt,
        params: SamplingParams | None = None,
        *,
        seer: SeerOption = None,
        image: ImageInput | None = None,
        chat: bool = True,
        **overrides: Any,
    ) -> Iterator[StreamChunk]:
        """Answer one prompt, yielding its text as the answer's blocks become final.

        A diffusion model reveals a semi-autoregressive block's tokens in any order, so text is
        final block by block: one `StreamChunk` per block that became final (`block_length` sets
        how early text arrives; the default of most models is one block, so one chunk). The
        chunks' `text`s concatenate to the answer; the last chunk's `result` is the whole
        `Generation`, the same as `generate(prompt, ...)` returns. Options as `generate`'s.
        """
        if not single(prompt):
            raise SeerError("stream answers one prompt; use generate for a batch")
        parts: list[PartialResult] = []
        on_block = parts.append
        (req,) = process(
            self, prompt, params, seer=seer, image=image, chat=chat, on_block=on_block, **overrides
        )
        from seer.engine import Engine, EngineConfig

        engine = Engine(self, EngineConfig(max_batch=1))
        engine.add(req)
        deltas, block = Deltas(), -1
        while engine.has_unfinished():
            results = engine.step()
            for part in parts:
                block = part.block
                if not part.final:
                    yield StreamChunk(deltas.push(part.text), part.text, block)
            parts.clear()
            for result in results:
                yield StreamChunk(deltas.finish(result.text), result.text, block, result)

    def graph_cache(self) -> GraphCache:
        """The model's captured CUDA graphs (static path), shared by every engine on it."""
        if self._graphs is None:
            from seer.diffusion.graphs import GraphCache

            self._graphs = GraphCache(cast(torch.nn.Module, self.model))
        return self._graphs

    def decode(self, ids: list[int]) -> str:
        if self.tokenizer is None:
            return " ".join(map(str, ids))
        return cast(str, self.tokenizer.decode(ids, skip_special_tokens=True)).strip()


def load(
    path: str | Path,
    dtype: torch.dtype | str | None = None,
    device: str | torch.device = "cpu",
    tokenizer: bool = True,
    weights: bool = True,
    threads: int | None = None,
) -> DiffusionLM:
    """Load a model folder (config.json + safetensors + tokenizer files) as published, or a
    built-in model by name (`seer.sampling.builtin_folder`): "builtin" (text) and "builtin-vqa"
    (questions about pictures) ship in the package; "builtin-v1" / "builtin-vqa-v1" (the first
    ones) load from a checkout of the repository (`checkpoints/`).

    Everything the folder says about defaults is read here, once: `lm.defaults` (sampling, from
    the family's official call and generation_config.json; Seer's settings, from seer.json).
    `weights=False`: the model stays an empty skeleton on the meta device, with no prompt
    processor: its defaults and settings resolve (`lm.sampling()`), it cannot generate.
    `threads`: torch's intra-op threads on the CPU (None: one for a small model such as the
    built-in ones, torch's own count for a larger one, unless the user set it: `seer.threads`)."""
    folder, raw = loader.read_config(path)
    seer_settings = SeerSettings.read(folder)  # checked before the slow part
    device = loader.resolve_device(device)
    if weights:
        model = loader.load_model(folder, dtype=dtype, device=device)
        choose_threads(model, device, threads)
    else:
        model = loader.build_model(raw, folder)
    tok = tokenizing.load_tokenizer(folder) if tokenizer else None
    loader.fit_to_tokenizer(model, tok)
    defaults = loader.load_defaults(folder, raw, model, tok, seer_settings)
    processor = None
    if tok is not None and weights:
        processor = loader.load_processor(folder, raw, model, tok, seer_settings)
    tokens = tokenizing.token_ids(raw, tok, model.banned_token_names)
    vocab = model.get_input_embeddings().num_embeddings
    for name in ("mask", "eos", "pad", "eot"):  # the ids the canvas and the loop use
        value = getattr(tokens, name)
        if value is not None and not (isinstance(value, int) and 0 <= value < vocab):
            raise CheckpointError(f"{folder}: the {name} token id {value!r} is not in [0, {vocab})")
    meta = {"seer": dict(seer_settings.raw)} if seer_settings.raw else {}
    return DiffusionLM(
        model,
        tok,
        tokens,
        name=folder.name,
        meta=meta,
        processor=processor,
        defaults=defaults,
        path=folder,
    )
