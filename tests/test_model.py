"""The native decoder against transformers on the same weights, and the static KV cache."""

from __future__ import annotations

import pytest
import torch

from specbench.model import ModelConfig, UnsupportedModelError, causal_mask, load_hf_config, load_model, tree_mask
from tests.conftest import tiny_hf_model

ARCHS = ["llama", "llama3", "qwen2", "qwen3", "mistral"]


def run_prefill(model, ids):
    n = ids.shape[1]
    model.setup_cache(64)
    pos = torch.arange(n)
    hidden = model(ids, pos, pos, causal_mask(0, n, 64, ids.device))
    return model.logits(hidden)


@pytest.mark.parametrize("arch", ARCHS)
def test_prefill_and_cached_decode_match_transformers(arch, save_hf):
    hf = tiny_hf_model(arch)
    ours = load_model(str(save_hf(hf)), dtype=torch.float32)
    ids = torch.randint(0, 96, (1, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = hf(ids).logits
        torch.testing.assert_close(run_prefill(ours, ids), ref, atol=1e-4, rtol=1e-4)
        # token by token through the static cache
        ours.setup_cache(64)
        for t in range(ids.shape[1]):
            pos = torch.tensor([t])
            step = ours.logits(ours(ids[:, t : t + 1], pos, pos, causal_mask(t, 1, 64, ids.device)))
            torch.testing.assert_close(step[0, 0], ref[0, t], atol=1e-4, rtol=1e-4)


def test_bf16_logits_within_stated_tolerance(save_hf):
    hf = tiny_hf_model("llama3")
    ours = load_model(str(save_hf(hf)), dtype=torch.bfloat16)
    ids = torch.randint(0, 96, (1, 10), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = hf(ids).logits
        got = run_prefill(ours, ids)
    # bf16 keeps ~3 significant digits; logits here are O(1)
    assert (got - ref).abs().max() < 0.1
    assert (got.argmax(-1) == ref.argmax(-1)).float().mean() > 0.9


def test_tree_verify_equals_sequential_paths(save_hf):
    """Each node's logits under a tree mask equal those of its root-to-node path run causally."""
    hf = tiny_hf_model("qwen3")
    model = load_model(str(save_hf(hf)), dtype=torch.float32)
    prompt = torch.randint(0, 96, (1, 6), generator=torch.Generator().manual_seed(3))
    parents = [-1, 0, 0, 1, 1, 2]  # node 0 is the root
    tokens = torch.tensor([[5, 7, 9, 11, 13, 15]])
    depth = [0, 1, 1, 2, 2, 2]
    n = len(parents)
    anc = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        j = i
        while j >= 0:
            anc[i, j] = True
            j = parents[j]
    with torch.no_grad():
        run_prefill(model, prompt)
        L = prompt.shape[1]
        tree_logits = model.logits(model(tokens, torch.tensor(depth) + L, torch.arange(L, L + n), tree_mask(L, anc, 64)))
        for i in range(n):
            path = [i]
            while parents[path[-1]] >= 0:
                path.append(parents[path[-1]])
            seq = torch.cat([prompt, tokens[:, path[::-1]]], dim=1)
            ref = hf(seq).logits[0, -1]
            torch.testing.assert_close(tree_logits[0, i], ref, atol=1e-4, rtol=1e-4)


def test_kv_keep_compacts_exactly_the_chosen_slots(save_hf):
    hf = tiny_hf_model("llama")
    model = load_model(str(save_hf(hf)), dtype=torch.float32)
    prompt = torch.randint(0, 96, (1, 5), generator=torch.Generator().manual_seed(4))
    parents = [-1, 0, 0, 2, 2]
    tokens = torch.tensor([[3, 4, 6, 8, 10]])
    n, L = 5, 5
    anc = torch.eye(n, dtype=torch.bool)
    for i, p in enumerate(parents):
        j = p
        while j >= 0:
            anc[i, j] = True
            j = parents[j]
    depth = anc.sum(1) - 1
    with torch.no_grad():
        run_prefill(model, prompt)
        model(tokens, depth + L, torch.arange(L, L + n), tree_mask(L, anc, 64))
        keep = torch.tensor([0, 2, 4])  # root -> node 2 -> node 4
        model.cache.keep(keep + L, L)
        k_tree = model.cache.k[:, :, :, : L + 3].clone()
        v_tree = model.cache.v[:, :, :, : L + 3].clone()
        # rebuild from scratch along the accepted path
        run_prefill(model, torch.cat([prompt, tokens[:, keep]], dim=1))
        torch.testing.assert_close(k_tree, model.cache.k[:, :, :, : L + 3], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(v_tree, model.cache.v[:, :, :, : L + 3], atol=1e-5, rtol=1e-5)


def test_shape_only_llama3_8b_matches_real_parameter_counts():
    model = load_model("llama-3-8b-instruct", shape_only=True, dtype=torch.bfloat16,
                       overrides={"num_hidden_layers": 1})
    layer = sum(p.numel() for p in model.model.layers[0].parameters())
    # Meta-Llama-3-8B: 8,030,261,248 parameters = 32 layers + 2 x 128256 x 4096 embeddings/head + final norm
    assert layer == (8_030_261_248 - 2 * 128256 * 4096 - 4096) // 32 == 218_112_000
    assert model.config.parameter_count()["per_layer"] == layer
    full = ModelConfig.from_hf(load_hf_config("llama-3-8b-instruct"))
    assert full.parameter_count()["total"] == 8_030_261_248


def test_unsupported_architecture_is_refused_clearly():
    with pytest.raises(UnsupportedModelError, match="supported"):
        ModelConfig.from_hf({"model_type": "gpt2", "vocab_size": 10})


def test_unknown_source_says_what_to_do(tmp_path):
    from specbench.model import ModelSourceError

    with pytest.raises(ModelSourceError, match="neither an existing folder"):
        load_model("not-a-model")
    (tmp_path / "config.json").write_text('{"model_type": "llama", "vocab_size": 8, "hidden_size": 8, '
                                           '"intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2}')
    with pytest.raises(ModelSourceError, match="no \\*.safetensors"):
        load_model(str(tmp_path))


def _forward_logits(runner, ids):
    n = ids.numel()
    pos = torch.arange(n)
    return runner(ids, pos, pos, causal_mask(0, n, runner.total_slots, "cpu"), graph=False)[0]


def test_fused_projections_keep_logits_and_memory():
    from specbench.decoding.forward import ForwardRunner
    from specbench.quantization import quantize_model

    model = load_model("tiny-target", dtype=torch.float32)
    ids = torch.randint(0, model.config.vocab_size, (7,), generator=torch.Generator().manual_seed(0))
    before = _forward_logits(ForwardRunner(model, 32), ids)
    params = sum(p.numel() for p in model.parameters())
    assert model.fuse_projections() == 2 * model.config.num_hidden_layers
    assert model.fuse_projections() == 0  # already stacked
    attn = model.model.layers[0].self_attn
    stacked = attn.fused[0]
    assert attn.k_proj.weight.untyped_storage().data_ptr() == stacked.untyped_storage().data_ptr()
    assert sum(p.numel() for p in model.parameters()) == params  # views, no second copy
    torch.testing.assert_close(_forward_logits(ForwardRunner(model, 32), ids), before, rtol=0, atol=1e-5)
    quantized = quantize_model(load_model("tiny-target", dtype=torch.float32), "w8a8_int8", "reference")
    assert quantized.fuse_projections() == 0  # quantized linears are left as they are


@pytest.mark.slow
def test_compiled_forward_matches_eager():
    from specbench.decoding.forward import ForwardRunner

    model = load_model("tiny-draft", dtype=torch.float32)
    ids = torch.randint(0, model.config.vocab_size, (3,), generator=torch.Generator().manual_seed(1))
    eager = _forward_logits(ForwardRunner(model, 16), ids)
    runner = ForwardRunner(model, 16, compile=True)
    assert runner.compiled
    torch.testing.assert_close(_forward_logits(runner, ids), eager, rtol=1e-4, atol=1e-4)
