"""A model's defaults, read once by the loader: the family's official call, generation_config.json
and the typed seer.json; `lm.sampling(**options)` builds every front end's params from them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

import seer
from seer.errors import CheckpointError, SeerError
from seer.models.defaults import ModelDefaults, SeerSettings
from seer.models.dream import DreamModel
from seer.models.factory import make_random_checkpoint
from seer.models.lavida import LavidaDream, LavidaLLaDA
from seer.models.llada import LLaDAModelLM
from seer.models.loader import BUILTIN, builtin_path
from seer.models.mmada import MMaDAModelLM
from seer.sampling import SamplingParams

GOLDEN = Path(__file__).parents[1] / "fixtures" / "golden"


@pytest.fixture(scope="module")
def builtin():
    return seer.load("builtin-v1")


@pytest.fixture(scope="module")
def builtin_vqa():
    return seer.load("builtin-vqa")


@pytest.fixture
def ckpt(tmp_path):
    return make_random_checkpoint("llada", tmp_path / "ck", layers=1, width=32)


# -- built-in models by name -------------------------------------------------------------------


def test_builtin_names_load_the_shipped_models(builtin, builtin_vqa):
    assert builtin_path("builtin-v1").name == "builtin-v1" and builtin.name == "builtin-v1"
    assert builtin_vqa.multimodal and not builtin.multimodal
    with pytest.raises(
        CheckpointError, match="builtin / builtin-vqa / builtin-v1 / builtin-vqa-v1"
    ):
        seer.load("builtin-nope")  # not a name, not a folder: the error names the choices
    assert set(BUILTIN) == {"builtin", "builtin-vqa", "builtin-v1", "builtin-vqa-v1"}
    assert seer.load("builtin-vqa-v1").multimodal


def test_builtin_models_default_to_the_window_they_were_trained_on(builtin, builtin_vqa):
    v2 = seer.load("builtin", weights=False)  # the text model v2: the 128 window
    vqa_v1 = seer.load("builtin-vqa-v1", weights=False)  # the first VQA model: 64
    for lm, g in ((builtin, 64), (builtin_vqa, 128), (v2, 128), (vqa_v1, 64)):
        p = lm.sampling()
        assert (p.gen_length, p.total_steps, p.block, p.temperature) == (g, g, g, 0.0)
        assert lm.defaults.sources["gen_length"] == "generation_config.json"
        assert lm.defaults.seer.gen_length == g  # seer.json's window is the same
    for lm in (v2, builtin_vqa):
        assert lm.defaults.seer.chat_only and lm.sampling().remasking == "low_confidence"
    for lm in (builtin_vqa, vqa_v1):  # not LaViDa's prefix_lm / shift: not trained for them
        assert (lm.sampling().cache, lm.sampling().schedule) == ("none", "linear")


def test_readme_multimodal_batch_example_answers(builtin_vqa):
    """`vlm.generate(["What colour?", "Count them"], image=[...])` with no gen_length used to
    return ['', ''] (a 128 window on the first VQA model, trained on 64); each model's own
    window answers."""
    from seer.demo import sample_images

    vqa_v1 = seer.load("builtin-vqa-v1")
    for lm in (builtin_vqa, vqa_v1):
        imgs = [s["file"] for s in sample_images(lm.name)[:2]]
        out = lm.generate(["What colour?", "Count them"], image=imgs)
        assert all(g.text for g in out)
        assert all(g.stats.gen_length == lm.defaults.seer.gen_length for g in out)


# -- lm.sampling --------------------------------------------------------------------------------


def test_sampling_puts_options_over_the_defaults_and_none_means_default(builtin):
    assert builtin.sampling() == builtin.sampling(gen_length=None, temperature=None)
    p = builtin.sampling(temperature=0.5, seed=3)
    assert (p.temperature, p.seed, p.gen_length) == (0.5, 3, 64)
    # another window: steps and block_length belong to the default window and follow the new one
    p = builtin.sampling(gen_length=32)
    assert (p.gen_length, p.total_steps, p.block) == (32, 32, 32)
    assert builtin.sampling(gen_length=32, steps=8).total_steps == 8
    with pytest.raises(SeerError, match="unknown generation option 'gen_len'"):
        builtin.sampling(gen_len=3)
    with pytest.raises(SeerError, match="bad generation option"):
        builtin.sampling(gen_length="many")


def test_generate_without_options_uses_the_models_defaults(builtin):
    g = builtin.generate("repeat star 3 times")
    assert g.stats.gen_length == 64
    assert g.token_ids == builtin.generate("repeat star 3 times", builtin.sampling()).token_ids


# -- official defaults per family -------------------------------------------------------------


def test_each_family_defaults_to_its_official_readme_call():
    llada = LLaDAModelLM.sampling_defaults({}, None)
    assert llada == {"gen_length": 128, "temperature": 0.0, "remasking": "low_confidence"}
    dream = DreamModel.sampling_defaults({}, None)  # README call + inherited top_k
    assert dream == {
        "gen_length": 512,
        "temperature": 0.2,
        "top_p": 0.95,
        "top_k": 50,
        "remasking": "entropy",
        "alg_temp": None,
        "eps": 1e-3,
    }
    assert DreamModel.sampling_defaults({"top_k": 7}, None)["top_k"] == 7  # config.json's own
    assert DreamModel.sampling_defaults({"top_k": None}, None)["top_k"] is None
    mmada = MMaDAModelLM.sampling_defaults({}, None)  # inference_mmu.py, max_seq_length 512
    assert (mmada["gen_length"], mmada["steps"], mmada["block_length"]) == (512, 256, 128)
    lavida = SamplingParams(**LavidaLLaDA.sampling_defaults({}, None))  # predict.py's call
    assert (lavida.gen_length, lavida.total_steps, lavida.block) == (64, 32, 64)
    assert (lavida.cache, lavida.schedule, lavida.temperature) == ("prefix_lm", "shift", 0.1)
    ldream = LavidaDream.sampling_defaults({}, None)
    assert (ldream["gen_length"], ldream["steps"], ldream["top_k"]) == (512, 512, 50)


def test_llada_v_defaults_stop_at_end_of_turn():
    lm = seer.load(GOLDEN / "llada_v")
    p = lm.sampling()
    assert (p.gen_length, p.total_steps, p.block) == (128, 128, 128)
    eot = lm.tokenizer.convert_tokens_to_ids("<|eot_id|>")
    assert p.stop == ((eot,),)
    assert lm.sampling(stop=()).stop == ()  # () turns the default stop word off


def test_mmada_confidence_is_float64():
    import torch

    assert MMaDAModelLM.confidence_dtype is torch.float64  # mmu_generate's softmax


def test_generation_config_sets_defaults_and_bad_values_are_one_line(ckpt):
    gen = ckpt / "generation_config.json"
    gen.write_text(json.dumps({"max_new_tokens": 32, "alg": "random", "eos_token_id": 1}))
    lm = seer.load(ckpt)
    assert (lm.sampling().gen_length, lm.sampling().remasking) == (32, "random")
    for text, match in [
        ("{not json", "generation_config.json is not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
        (json.dumps({"steps": "many"}), "steps has the wrong type"),
        (json.dumps({"max_new_tokens": 30, "block_length": 7}), "not a multiple"),
    ]:
        gen.write_text(text)
        with pytest.raises(CheckpointError, match=match) as e:
            seer.load(ckpt)
        assert "\n" not in str(e.value)


# -- seer.json ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, match",
    [
        ("{'gen_length': 64", "seer.json is not valid JSON"),
        ("[]", "must hold a JSON object"),
        (json.dumps({"gen_lenght": 64}), "unknown field 'gen_lenght'"),
        (json.dumps({"gen_length": "64"}), "gen_length must be an integer"),
        (json.dumps({"config": [1]}), "config must be a JSON object"),
        (json.dumps({"system_prompt": 3}), "system_prompt must be a string or null"),
        (json.dumps({"vq_model": "../../../../etc"}), "leaves the model folder"),
    ],
)
def test_bad_seer_json_is_one_line_naming_the_field(ckpt, text, match):
    (ckpt / "seer.json").write_text(text)
    with pytest.raises(CheckpointError, match=match) as e:
        seer.load(ckpt)
    assert "\n" not in str(e.value)


def test_seer_json_is_typed(tmp_path):
    shutil.copytree(
        builtin_path("builtin-vqa-v1"), tmp_path / "m", ignore=lambda *_: ["*.safetensors"]
    )
    s = SeerSettings.read(tmp_path / "m")
    assert s.gen_length == 64 and s.has_system_prompt and s.system_prompt is None
    assert s.config["signal"] == "eos_prob" and s.calibration["n"] == 300
    assert SeerSettings.from_dict({"_note": "kept"}, tmp_path).gen_length is None


def test_defaults_object_is_validated_once():
    with pytest.raises(SeerError, match="multiple"):
        ModelDefaults.build({"gen_length": 30, "block_length": 7})


# -- official loader steps ----------------------------------------------------------------------


def test_llada_v_vocabulary_is_cut_to_the_tokenizer_as_the_official_loader_does(tmp_path):
    """LLaDA-V's `load_pretrained_model` calls `resize_token_embeddings(len(tokenizer))`: the
    release has 126464 rows and 126349 tokens. A fixture padded with 10 extra (random) rows
    must load back to the tokenizer's rows and answer exactly as the unpadded one."""
    from safetensors.torch import load_file, save_file

    from seer.models.loader import load_model

    folder = tmp_path / "v"
    shutil.copytree(GOLDEN / "llada_v", folder)
    raw = json.loads((folder / "config.json").read_text())
    state = load_file(folder / "model.safetensors")
    extra = 10
    for key in ("model.embed_tokens.weight", "lm_head.weight"):
        w = state[key]
        state[key] = torch.cat([w, torch.randn(extra, w.shape[1]) * 5])  # loud extra rows
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    raw["vocab_size"] += extra
    (folder / "config.json").write_text(json.dumps(raw))
    padded, plain = seer.load(folder), seer.load(GOLDEN / "llada_v")
    assert padded.model.get_input_embeddings().num_embeddings == len(padded.tokenizer)
    kw = dict(gen_length=16, steps=16, block_length=16, stop=())
    assert padded.generate("hello", **kw).token_ids == plain.generate("hello", **kw).token_ids
    unresized = load_model(folder)  # the rows a loader without the step would keep
    assert unresized.get_input_embeddings().num_embeddings == len(padded.tokenizer) + extra
