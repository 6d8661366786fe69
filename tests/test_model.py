"""The native decoder against transformers on the same weights, and the static KV cache."""

from __future__ import annotations

import pytest
import torch

from specbench.model import ModelConfig, UnsupportedModelError, causal_mask, load_hf_config, load_model, tree_mask
from tests.conftest import tiny_hf_config, tiny_hf_model

# (transformers model_type, config changes): every architecture, and each optional field the decoder implements
ARCHS = {
    "llama": ("llama", {}),
    "llama3": ("llama3", {}),
    "qwen2": ("qwen2", {}),
    "qwen3": ("qwen3", {}),
    "qwen3-bias": ("qwen3", {"attention_bias": True}),
    "mistral": ("mistral", {}),
    "llama-attention-bias": ("llama", {"attention_bias": True}),
    "llama-mlp-bias": ("llama", {"mlp_bias": True}),
    "llama-tied": ("llama", {"tie_word_embeddings": True}),
    "mistral-sliding-window": ("mistral", {"sliding_window": 4}),  # 12 tokens: the window cuts most of them
}


def run_prefill(model, ids):
    n = ids.shape[1]
    model.setup_cache(64)
    pos = torch.arange(n)
    hidden = model(ids, pos, pos, causal_mask(0, n, 64, ids.device))
    return model.logits(hidden)


@pytest.mark.parametrize("arch", ARCHS)
def test_prefill_and_cached_decode_match_transformers(arch, save_hf):
    model_type, changes = ARCHS[arch]
    hf = tiny_hf_model(model_type, **changes)
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


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("arch", ["llama3", "qwen3"])
def test_gpu_kernels_match_transformers(arch, save_hf):
    """On a GPU the KV-cache write rotates the keys and the attention kernel the queries (head dim 64, which the
    kernel takes); prefill and cached decode against transformers' float32 logits on the same weights."""
    model_type, changes = ARCHS[arch]
    hf = tiny_hf_model(model_type, **{**changes, "hidden_size": 256, "head_dim": 64})
    ours = load_model(str(save_hf(hf)), dtype=torch.float16, device="cuda")
    ids = torch.randint(0, 96, (1, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = hf(ids).logits[0].cuda()
        ids = ids.cuda()
        assert ours.model.layers[0].self_attn.head_dim == 64
        ours.setup_cache(64)
        pos = torch.arange(ids.shape[1], device="cuda")
        got = [ours.logits(ours(ids, pos, pos, causal_mask(0, ids.shape[1], 64, ids.device)))[0]]
        ours.setup_cache(64)
        for t in range(ids.shape[1]):
            pos = torch.tensor([t], device="cuda")
            got.append(ours.logits(ours(ids[:, t : t + 1], pos, pos, causal_mask(t, 1, 64, ids.device)))[0])
    for logits in (got[0], torch.cat(got[1:])):
        assert ((logits - ref).norm() / ref.norm()).item() < 1e-2


def test_bf16_logits_within_stated_tolerance(save_hf):
    hf = tiny_hf_model("llama3")
    ours = load_model(str(save_hf(hf)), dtype=torch.bfloat16)
    ids = torch.randint(0, 96, (1, 10), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = hf(ids).logits
        got = run_prefill(ours, ids)
    # bf16 keeps ~3 significant digits; logits here are O(1)
    assert (got - ref).abs().max() < 0.1
    # the token picked in bf16 is the reference's best, or within twice that tolerance of it (a near tie)
    picked = ref.gather(-1, got.argmax(-1, keepdim=True)).squeeze(-1)
    assert (picked >= ref.max(-1).values - 0.2).all()
    assert (got.argmax(-1) == ref.argmax(-1)).float().mean() >= 0.8


@pytest.mark.parametrize("arch", ["qwen3", "mistral-sliding-window"])
def test_tree_verify_equals_sequential_paths(save_hf, arch):
    """Each node's logits under a tree mask equal those of its root-to-node path run causally."""
    model_type, changes = ARCHS[arch]
    hf = tiny_hf_model(model_type, **changes)
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
        model.cache.keep(keep + L, torch.arange(L, L + 3))
        k_tree = model.cache.k[:, :, :, : L + 3].clone()
        v_tree = model.cache.v[:, :, :, : L + 3].clone()
        # rebuild from scratch along the accepted path
        run_prefill(model, torch.cat([prompt, tokens[:, keep]], dim=1))
        torch.testing.assert_close(k_tree, model.cache.k[:, :, :, : L + 3], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(v_tree, model.cache.v[:, :, :, : L + 3], atol=1e-5, rtol=1e-5)


def test_shape_only_llama3_8b_matches_real_parameter_counts():
    from specbench.model import Transformer

    full = ModelConfig.from_hf(load_hf_config("llama-3-8b-instruct"))
    with torch.device("meta"):  # the shapes the loader materialises, without 16 GB of random weights
        model = Transformer(full)
    layer = sum(p.numel() for p in model.model.layers[0].parameters())
    # Meta-Llama-3-8B: 8,030,261,248 parameters = 32 layers + 2 x 128256 x 4096 embeddings/head + final norm
    assert layer == (8_030_261_248 - 2 * 128256 * 4096 - 4096) // 32 == 218_112_000
    assert sum(p.numel() for p in model.parameters()) == full.parameter_count()["total"] == 8_030_261_248
    assert full.parameter_count()["per_layer"] == layer


# fields the decoder does not implement: transformers computes something else, the decoder refuses by name
REFUSED = {
    "hidden_act": ("llama", {"hidden_act": "gelu"}),
    "use_sliding_window": ("qwen2", {"use_sliding_window": True, "sliding_window": 4, "max_window_layers": 1}),
}


@pytest.mark.parametrize("field", REFUSED)
def test_unimplemented_config_fields_are_refused_by_name(field, save_hf):
    model_type, changes = REFUSED[field]
    hf = tiny_hf_model(model_type, **changes)
    plain = tiny_hf_model(model_type)
    ids = torch.randint(0, 96, (1, 12), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        assert not torch.allclose(hf(ids).logits, plain(ids).logits, atol=1e-3)  # the field matters
    with pytest.raises(UnsupportedModelError, match=f"config field {field}="):
        load_model(str(save_hf(hf)), dtype=torch.float32)


def test_partial_rotary_factor_is_refused_by_name():
    cfg = {**tiny_hf_config("llama").to_dict(), "partial_rotary_factor": 0.5}
    with pytest.raises(UnsupportedModelError, match="partial_rotary_factor=0.5"):
        ModelConfig.from_hf(cfg)


def _rewrite(path, config_changes=None, tensors=None, drop=()):
    """Edit a saved checkpoint: config.json fields (None deletes), tensors added or replaced, keys dropped."""
    import json

    from safetensors.torch import load_file, save_file

    config = json.loads((path / "config.json").read_text())
    for key, value in (config_changes or {}).items():
        config.pop(key, None) if value is None else config.__setitem__(key, value)
    (path / "config.json").write_text(json.dumps(config))
    state = {}
    for f in path.glob("*.safetensors"):
        state.update(load_file(f))
        f.unlink()
    (path / "model.safetensors.index.json").unlink(missing_ok=True)
    state = {k: v for k, v in {**state, **(tensors or {})}.items() if k not in drop}
    save_file(state, path / "model.safetensors")
    return path


def test_unused_checkpoint_tensors_stop_the_load(save_hf):
    from specbench.model import ModelSourceError

    # a bias-carrying Llama whose config lost attention_bias: its biases would be dropped silently
    path = _rewrite(save_hf(tiny_hf_model("llama", attention_bias=True)), {"attention_bias": None})
    with pytest.raises(ModelSourceError, match="model.layers.0.self_attn.o_proj.bias"):
        load_model(str(path), dtype=torch.float32)
    # a tensor outside every module group
    path = _rewrite(save_hf(tiny_hf_model("llama"), "extra"), tensors={"model.extra_proj.weight": torch.ones(2)})
    with pytest.raises(ModelSourceError, match="model.extra_proj.weight"):
        load_model(str(path), dtype=torch.float32)


def test_tied_head_copy_must_equal_the_embeddings(save_hf):
    from specbench.model import ModelSourceError

    hf = tiny_hf_model("llama", tie_word_embeddings=True)
    embed = hf.model.embed_tokens.weight.detach()
    same = _rewrite(save_hf(hf), tensors={"lm_head.weight": embed.clone()})
    assert load_model(str(same), dtype=torch.float32).lm_head.weight is not None
    other = _rewrite(save_hf(hf, "other"), tensors={"lm_head.weight": embed + 1})
    with pytest.raises(ModelSourceError, match="tie_word_embeddings"):
        load_model(str(other), dtype=torch.float32)


def test_integer_tensors_are_never_read_as_float_weights(save_hf):
    from specbench.model import ModelSourceError

    path = save_hf(tiny_hf_model("llama"))
    codes = torch.ones(64, 64, dtype=torch.int8)
    _rewrite(path, tensors={"model.layers.1.self_attn.q_proj.weight": codes})
    with pytest.raises(ModelSourceError, match=r"model.layers.1.self_attn.q_proj.weight \(torch.int8\).*quant=auto"):
        load_model(str(path), dtype=torch.float32)


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


def test_checkpoint_projections_load_into_the_stacked_linears(save_hf):
    from safetensors.torch import load_file

    from specbench.model import ModelSourceError

    path = save_hf(tiny_hf_model("qwen2"))  # q/k/v biases
    model = load_model(str(path), dtype=torch.float32)
    state = {k: v for f in path.glob("*.safetensors") for k, v in load_file(f).items()}
    attn, mlp, pre = model.model.layers[1].self_attn, model.model.layers[1].mlp, "model.layers.1."
    qkv = [state[f"{pre}self_attn.{p}_proj.weight"] for p in "qkv"]
    assert torch.equal(attn.qkv.weight, torch.cat(qkv)) and attn.qkv.weight.shape[0] > qkv[0].shape[0]
    assert torch.equal(attn.qkv.bias, torch.cat([state[f"{pre}self_attn.{p}_proj.bias"] for p in "qkv"]))
    assert torch.equal(mlp.gate_up.weight, torch.cat([state[pre + "mlp.gate_proj.weight"],
                                                      state[pre + "mlp.up_proj.weight"]]))
    assert sum(p.numel() for p in model.parameters()) == sum(t.numel() for t in state.values())
    assert not any(name.endswith(("q_proj", "gate_proj")) for name, _ in model.named_modules())
    short = _rewrite(save_hf(tiny_hf_model("llama"), "short"), drop=("model.layers.0.self_attn.v_proj.weight",))
    with pytest.raises(ModelSourceError, match=r"lacks \['model.layers.0.self_attn.v_proj.weight'\]"):
        load_model(str(short), dtype=torch.float32)
    wrong = save_hf(tiny_hf_model("llama"), "wrong")
    name = "model.layers.0.self_attn.k_proj.weight"
    k = {n: t for f in wrong.glob("*.safetensors") for n, t in load_file(f).items()}[name]
    _rewrite(wrong, tensors={name: k[:-1]})
    with pytest.raises(ModelSourceError, match="k_proj.weight has shape"):
        load_model(str(wrong), dtype=torch.float32)


@pytest.mark.slow
def test_compiled_forward_matches_eager():
    from specbench.decoding.forward import ForwardRunner

    model = load_model("tiny-draft", dtype=torch.float32)
    ids = torch.randint(0, model.config.vocab_size, (3,), generator=torch.Generator().manual_seed(1))
    eager = _forward_logits(ForwardRunner(model, 16), ids)
    runner = ForwardRunner(model, 16, compile=True)
    assert runner.compiled
    torch.testing.assert_close(_forward_logits(runner, ids), eager, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_layer_scope_compiles_one_layer_for_all_and_matches_eager():
    """``compile_scope="layer"``: the six layers of tiny-target share one compiled pair of halves (three graphs: the
    first half once with the previous layer's residual add and once without it, for the first layer; not twelve, nor
    one whole forward), and the logits are the eager ones."""
    from torch._dynamo.utils import counters

    from specbench.decoding.forward import ForwardRunner

    model = load_model("tiny-target", dtype=torch.float32)
    assert len(model.model.layers) == 6
    ids = torch.randint(0, model.config.vocab_size, (3,), generator=torch.Generator().manual_seed(1))
    eager = _forward_logits(ForwardRunner(model, 16), ids)
    torch._dynamo.reset()
    counters.clear()
    runner = ForwardRunner(model, 16, compile=True, compile_scope="layer")
    torch.testing.assert_close(_forward_logits(runner, ids), eager, rtol=1e-4, atol=1e-4)
    assert counters["stats"]["unique_graphs"] == 3
    # a runner without compile over the same model still runs it plainly
    torch.testing.assert_close(_forward_logits(ForwardRunner(model, 16), ids), eager, rtol=0, atol=0)


def test_unknown_compile_scope_is_refused_with_the_allowed_values():
    from specbench.config import ConfigValueError, EngineConf, check_engine
    from specbench.decoding.forward import ForwardRunner

    with pytest.raises(ConfigValueError, match="engine.compile_scope='model'.*layer"):
        check_engine(EngineConf(compile=True, compile_scope="model"))
    with pytest.raises(ConfigValueError, match="engine.compile_scope='layer'.*engine.compile=true"):
        check_engine(EngineConf(compile_scope="layer"))
    with pytest.raises(ValueError, match="compile_scope='block'"):
        ForwardRunner(load_model("tiny-draft", dtype=torch.float32), 16, compile=True, compile_scope="block")


class _SplitSums(torch.nn.Module):
    """A dense linear that leaves its output as partial sums over three K ranges (``QuantLinear.partials``' form)."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.linear = linear

    def forward(self, x):
        return self.linear(x)

    def partials(self, x, row_reduced=False):
        w = self.linear.weight
        return torch.stack([xs @ ws.t() for xs, ws in zip(x.float().chunk(3, -1), w.float().chunk(3, -1))])


def _leave_sums_to_consumers(model):
    for layer in model.model.layers:
        attn, mlp = layer.self_attn, layer.mlp
        attn.o_proj, mlp.gate_up, mlp.down_proj = (_SplitSums(m) for m in (attn.o_proj, mlp.gate_up, mlp.down_proj))


@pytest.mark.parametrize("compile_scope", [None, pytest.param("layer", marks=pytest.mark.slow)])
def test_split_k_partials_left_to_the_consumers_give_the_same_forward(compile_scope):
    """o_proj, gate/up and down leaving float32 partial sums (as the Triton W4A16 kernel does in a compiled forward on
    a GPU): the norms, SiLU, the next layer's residual add, the final norm and the EAGLE-3 feature rows add them,
    and the forward is the plain one's; the partials differ from the output, so a consumer that skipped the sum
    would fail."""
    from specbench.decoding.forward import ForwardRunner

    model = load_model("tiny-target", dtype=torch.float32)
    ids = torch.randint(0, model.config.vocab_size, (3,), generator=torch.Generator().manual_seed(1))
    pos = torch.arange(ids.numel())

    def hidden_with_features():
        model.setup_cache(16)
        return model(ids[None], pos, pos, causal_mask(0, ids.numel(), 16, "cpu"))

    model.feature_layers = (0, 3)
    plain, plain_features = _forward_logits(ForwardRunner(model, 16), ids), hidden_with_features()
    x = torch.randn(2, model.config.hidden_size)
    o_proj = model.model.layers[0].self_attn.o_proj
    _leave_sums_to_consumers(model)
    parts = model.model.layers[0].self_attn.o_proj.partials(x)
    assert parts.shape[0] == 3 and (parts[0] - o_proj(x)).abs().max() > 1e-3
    torch.testing.assert_close(hidden_with_features(), plain_features, rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()
    runner = ForwardRunner(model, 16, compile=compile_scope is not None, compile_scope=compile_scope)
    torch.testing.assert_close(_forward_logits(runner, ids), plain, rtol=1e-4, atol=1e-4)
