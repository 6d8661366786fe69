"""EAGLE-3: the target's feature layers, the head's forward against a plain re-computation from the published layout,
both weight formats, random heads, and the errors for heads that do not fit their target."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from specbench.decoding.forward import ForwardRunner
from specbench.decoding.session import ModelSession
from specbench.decoding.drafter import DraftContext
from specbench.drafters.eagle3 import Eagle3Drafter
from specbench.drafters.eagle3_head import (OFFICIAL_DRAFT_VOCAB, default_target_layers, load_eagle3_head,
                                            random_eagle3_head)
from specbench.drafters.eagle_head import EagleHeadError, load_eagle_head
from specbench.model import load_model
from specbench.model.kv_cache import causal_mask
from tests.conftest import tiny_hf_model, write_eagle3_head, write_eagle_head

LAYERS = [1, 2, 3]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 4-layer tiny target (HF and native) and an EAGLE-3 head for it in the published layout."""
    path = tmp_path_factory.mktemp("eagle3")
    hf = tiny_hf_model("llama", num_hidden_layers=4)
    hf.save_pretrained(path / "target")
    write_eagle3_head(path / "head", hf, LAYERS, scale=0.3)
    return hf, load_model(str(path / "target"), dtype=torch.float32), path


def test_target_returns_the_inputs_of_the_feature_layers(tiny):
    hf, target, _ = tiny
    ids = torch.tensor([[5, 9, 17, 3, 44, 8]])
    n, h = ids.shape[1], hf.config.hidden_size
    with torch.no_grad():
        ref = hf(ids, output_hidden_states=True)
        target.setup_cache(16)
        pos = torch.arange(n)
        plain = target(ids, pos, pos, causal_mask(0, n, 16, ids.device))
        target.feature_layers = (1, 2, 3)
        wide = target(ids, pos, pos, causal_mask(0, n, 16, ids.device))
        target.feature_layers = ()
    assert wide.shape == (1, n, 4 * h)
    torch.testing.assert_close(wide[..., :h], plain)
    torch.testing.assert_close(target.logits(wide), target.logits(plain))
    # transformers' hidden_states[i] is the input of decoder layer i; the last entry is after the final norm
    torch.testing.assert_close(wide[..., :h], ref.hidden_states[-1], atol=1e-5, rtol=1e-4)
    for slot, layer in enumerate((1, 2, 3)):
        torch.testing.assert_close(wide[..., (slot + 1) * h : (slot + 2) * h], ref.hidden_states[layer],
                                   atol=1e-5, rtol=1e-4)


def plain_head(weights: dict, config: dict, embed: torch.Tensor, tokens, features: list[torch.Tensor]):
    """The head's outputs for ``tokens`` at positions 0…n-1 under a causal mask, written from the layout alone.

    ``features[i]`` is a [3h] target feature (passed through ``fc``) or an [h] output of the head itself.
    Returns the layer outputs [n, h] and the draft-vocabulary logits [n, draft_vocab].
    """
    eps, theta = config["rms_norm_eps"], config.get("rope_theta", 10000.0)
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    h = config["hidden_size"]
    d = h // heads

    def rms(x, w):
        return w * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)

    def p(name):
        return weights[name].float()

    g = torch.stack([f @ p("fc.weight").T if f.numel() == 3 * h else f for f in features])
    a = torch.cat([rms(embed[tokens], p("midlayer.input_layernorm.weight")),
                   rms(g, p("midlayer.hidden_norm.weight"))], dim=-1)
    n = len(tokens)
    q = (a @ p("midlayer.self_attn.q_proj.weight").T).view(n, heads, d).transpose(0, 1)
    k = (a @ p("midlayer.self_attn.k_proj.weight").T).view(n, kv_heads, d).transpose(0, 1)
    v = (a @ p("midlayer.self_attn.v_proj.weight").T).view(n, kv_heads, d).transpose(0, 1)
    inv = 1.0 / theta ** (torch.arange(0, d, 2).float() / d)
    angle = torch.arange(n).float()[:, None] * inv[None]
    cos, sin = torch.cat([angle, angle], -1).cos(), torch.cat([angle, angle], -1).sin()

    def rope(x):
        return x * cos + torch.cat([-x[..., d // 2 :], x[..., : d // 2]], -1) * sin

    q, k = rope(q), rope(k)
    k, v = k.repeat_interleave(heads // kv_heads, 0), v.repeat_interleave(heads // kv_heads, 0)
    scores = q @ k.transpose(1, 2) / d**0.5 + torch.full((n, n), float("-inf")).triu(1)
    attn = (scores.softmax(-1) @ v).transpose(0, 1).reshape(n, h) @ p("midlayer.self_attn.o_proj.weight").T
    x = g + attn
    y = rms(x, p("midlayer.post_attention_layernorm.weight"))
    x = x + (F.silu(y @ p("midlayer.mlp.gate_proj.weight").T) * (y @ p("midlayer.mlp.up_proj.weight").T)) @ p(
        "midlayer.mlp.down_proj.weight").T
    return x, rms(x, p("norm.weight")) @ p("lm_head.weight").T


def test_head_forward_matches_a_plain_recomputation(tiny):
    hf, target, path = tiny
    head = load_eagle3_head(str(path / "head"), target)
    weights = load_file(path / "head" / "model.safetensors")
    config = json.loads((path / "head" / "config.json").read_text())
    h = config["hidden_size"]
    g = torch.Generator().manual_seed(3)
    tokens = [4, 50, 7, 19, 88]
    features = [torch.randn(3 * h, generator=g) for _ in range(4)]
    head.setup_cache(16)
    with torch.no_grad():
        pos = torch.arange(4)  # the target's features for the first four tokens
        first = head(torch.tensor([tokens[:4]]), pos, pos, causal_mask(0, 4, 16, pos.device),
                     features=torch.stack(features)[None])[0]
        last = torch.tensor([4])  # then the head's own output as the next feature, as later draft steps do
        second = head(torch.tensor([tokens[4:]]), last, last, causal_mask(4, 1, 16, pos.device),
                      features=first[-1:][None])[0]
    ref_hidden, ref_logits = plain_head(weights, config, hf.model.embed_tokens.weight.detach(), tokens,
                                        features + [first[-1]])
    torch.testing.assert_close(torch.cat([first, second]), ref_hidden, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(head.logits(torch.cat([first, second])), ref_logits, atol=1e-4, rtol=1e-4)
    # draft ids map to target ids through the offsets: the written subset, in order
    kept = weights["t2d"].nonzero().flatten()
    assert torch.equal(head.target_ids(torch.arange(kept.numel())), kept)


def test_bin_with_own_embeddings_loads_the_same_head(tiny, tmp_path):
    hf, target, path = tiny
    write_eagle3_head(tmp_path / "bin", hf, LAYERS, scale=0.3, own_embeddings=True, fmt="bin")
    assert not list((tmp_path / "bin").glob("*.safetensors"))
    from_bin = load_eagle3_head(str(tmp_path / "bin"), target)
    from_safetensors = load_eagle3_head(str(path / "head"), target)
    assert from_bin.embed_tokens is not target.model.embed_tokens
    assert from_safetensors.embed_tokens is target.model.embed_tokens
    expected = from_safetensors.state_dict()
    for name, value in from_bin.state_dict().items():
        torch.testing.assert_close(value, expected[name], msg=name)


def test_the_paper_layers_and_random_heads():
    assert default_target_layers(32) == (2, 16, 29)  # Llama-3.1-8B
    assert default_target_layers(80) == (2, 40, 77)  # Llama-3.3-70B
    hf = tiny_hf_model("llama", num_hidden_layers=6, vocab_size=96)
    target = load_model_from_hf(hf)
    head = random_eagle3_head(target)
    assert head.target_layers == (2, 3, 3) and head.lm_head.weight.shape == (min(OFFICIAL_DRAFT_VOCAB, 96), 64)
    assert head.fc.weight.shape == (64, 192) and head.midlayer.self_attn.qkv.weight.shape[1] == 128
    assert not head.d2t.any()
    with pytest.raises(EagleHeadError, match="at least 3 layers"):
        random_eagle3_head(load_model_from_hf(tiny_hf_model("llama", num_hidden_layers=2)))


def load_model_from_hf(hf):
    from specbench.model import Transformer
    from specbench.model.config import ModelConfig

    model = Transformer(ModelConfig.from_hf(hf.config.to_dict()))
    model.load_state_dict(hf.state_dict())
    return model


def _edit(path, *, config=None, weights=None):
    if config:
        raw = json.loads((path / "config.json").read_text())
        raw.update(config)
        (path / "config.json").write_text(json.dumps(raw))
    if weights:
        from safetensors.torch import save_file

        tensors = load_file(path / "model.safetensors")
        tensors.update(weights)
        save_file(tensors, path / "model.safetensors")


def test_heads_that_do_not_fit_are_refused(tiny, tmp_path):
    hf, target, path = tiny
    other = tiny_hf_model("llama", num_hidden_layers=4, hidden_size=32, intermediate_size=64)
    write_eagle3_head(tmp_path / "narrow", other, LAYERS)
    with pytest.raises(EagleHeadError, match="hidden size 64 needs"):
        load_eagle3_head(str(tmp_path / "narrow"), target)
    write_eagle3_head(tmp_path / "vocab", tiny_hf_model("llama", num_hidden_layers=4, vocab_size=128), LAYERS)
    with pytest.raises(EagleHeadError, match="vocab 128, the target 96"):
        load_eagle3_head(str(tmp_path / "vocab"), target)
    write_eagle3_head(tmp_path / "deep", hf, [2, 16, 29])
    with pytest.raises(EagleHeadError, match=r"feature layers \(2, 16, 29\) do not fit a 4-layer target"):
        load_eagle3_head(str(tmp_path / "deep"), target)
    write_eagle3_head(tmp_path / "maps", hf, LAYERS)
    _edit(tmp_path / "maps", weights={"t2d": torch.ones(96, dtype=torch.bool)})
    with pytest.raises(EagleHeadError, match="does not agree with d2t"):
        load_eagle3_head(str(tmp_path / "maps"), target)
    write_eagle3_head(tmp_path / "offsets", hf, LAYERS)
    _edit(tmp_path / "offsets", weights={"d2t": torch.full((72,), 90)})
    with pytest.raises(EagleHeadError, match="d2t does not map"):
        load_eagle3_head(str(tmp_path / "offsets"), target)
    write_eagle_head(tmp_path / "eagle1", hf)
    with pytest.raises(EagleHeadError, match="not an EAGLE-3 head"):
        load_eagle3_head(str(tmp_path / "eagle1"), target)
    with pytest.raises(EagleHeadError, match="rotated"):
        load_eagle3_head(str(path / "head"), target, target_rotated=True)
    session = ModelSession(ForwardRunner(target, 64))
    with pytest.raises(TypeError, match="needs an EAGLE-3 head"):
        Eagle3Drafter(DraftContext(session, None), load_eagle_head(str(tmp_path / "eagle1"), target), 3, 3, 10)


def test_the_paper_layers_are_used_when_the_config_names_none(tmp_path):
    hf = tiny_hf_model("llama", num_hidden_layers=8)
    write_eagle3_head(tmp_path / "head", hf, [0, 0, 0])
    raw = json.loads((tmp_path / "head" / "config.json").read_text())
    del raw["eagle_aux_hidden_state_layer_ids"]
    (tmp_path / "head" / "config.json").write_text(json.dumps(raw))
    assert load_eagle3_head(str(tmp_path / "head"), load_model_from_hf(hf)).target_layers == (2, 4, 5)


def test_a_drafter_built_later_on_the_same_target_leaves_eagle3_drafting_as_alone(tiny):
    """Building another drafter resets the target's feature layers; the EAGLE-3 drafter's generation sets them back,
    so it drafts exactly as on a target of its own (same accept lengths), and a plain drafter then gets them off."""
    from specbench.decoding.generate import generate
    from specbench.engine import Engine

    _, _, path = tiny
    engine = Engine(max_seq_len=96)
    conf = {"name": "eagle3", "head": str(path / "head"), "topk": 3, "depth": 3, "tree_size": 8}
    prompt = [5, 9, 17, 3, 44, 8, 21]
    alone_target = engine.session(engine.model({"source": str(path / "target")}))
    alone = generate(alone_target, engine.drafter(conf, alone_target), prompt, max_new_tokens=24)
    target = engine.session(engine.model({"source": str(path / "target")}))
    eagle3 = engine.drafter(conf, target)
    plain = engine.drafter({"name": "none"}, target)
    assert target.model.feature_layers == ()
    drafted = generate(target, eagle3, prompt, max_new_tokens=24)
    assert target.model.feature_layers == tuple(LAYERS)
    assert drafted.tokens == alone.tokens and drafted.accept_lengths == alone.accept_lengths
    assert generate(target, plain, prompt, max_new_tokens=24).tokens == alone.tokens
    assert target.model.feature_layers == ()


@pytest.mark.slow
def test_layer_compile_scope_compiles_the_head_whole():
    """``engine.compile_scope=layer`` on the EAGLE-3 head (its layer is not a ``DecoderLayer``): its whole forward is
    compiled, not left eager, and gives the eager logits."""
    from torch._dynamo.utils import counters

    head = random_eagle3_head(load_model_from_hf(tiny_hf_model("llama", num_hidden_layers=6, vocab_size=96)))
    features = torch.randn(3, 192, generator=torch.Generator().manual_seed(0))
    ids, pos = torch.tensor([5, 7, 9]), torch.arange(3)

    def logits(runner):
        return runner(ids, pos, pos, causal_mask(0, 3, runner.total_slots, "cpu"), features=features, graph=False)[0]

    eager = logits(ForwardRunner(head, 16))
    torch._dynamo.reset()
    counters.clear()
    torch.testing.assert_close(logits(ForwardRunner(head, 16, compile=True, compile_scope="layer")), eager,
                               rtol=1e-4, atol=1e-4)
    assert counters["stats"]["unique_graphs"] == 1
