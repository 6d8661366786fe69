"""Tiny native models quantized at load time (RTN) against their own fp32 selves."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from specbench.model import causal_mask, load_model
from specbench.quantization import (
    QuantConfigError, QuantLinear, build_quantizer, describe, quantize_model, record_act_absmax, smooth_model,
)
from tests.conftest import tiny_hf_model

SHAPE = dict(hidden_size=128, intermediate_size=256)
# lowest argmax agreement over 64 positions x 6 seeds was 0.97 (int8), 0.89 (fp8), 0.64 (4-bit) on random weights
MIN_AGREEMENT = {"w8a8_int8": 0.9, "w8a16": 0.9, "w8a8_fp8": 0.8, "w4a16": 0.5, "w4a8": 0.5, "w4a8_fp8": 0.5}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("quant_model") / "llama"
    tiny_hf_model("llama", seed=0, **SHAPE).save_pretrained(path)
    return str(path)


def logits(model, n=64):
    ids = torch.randint(0, 96, (1, n), generator=torch.Generator().manual_seed(11))
    model.setup_cache(n)
    pos = torch.arange(n)
    with torch.no_grad():
        return model.logits(model(ids, pos, pos, causal_mask(0, n, n, ids.device)))[0]


def kl(p_logits, q_logits):
    return F.kl_div(q_logits.log_softmax(-1), p_logits.log_softmax(-1), log_target=True, reduction="batchmean").item()


@pytest.fixture(scope="module")
def fp32_logits(checkpoint):
    return logits(load_model(checkpoint, dtype=torch.float32))


@pytest.fixture(scope="module")
def quantized(checkpoint):
    return {s: logits(load_model(checkpoint, dtype=torch.float32, quantizer=build_quantizer(s, "reference", {})))
            for s in MIN_AGREEMENT}


@pytest.mark.parametrize("scheme", list(MIN_AGREEMENT))
def test_argmax_agreement_with_fp32_self(scheme, quantized, fp32_logits):
    agree = (quantized[scheme].argmax(-1) == fp32_logits.argmax(-1)).float().mean().item()
    assert agree >= MIN_AGREEMENT[scheme]
    assert not torch.equal(quantized[scheme], fp32_logits)  # something was quantized


def test_kl_orders_schemes_by_precision(quantized, fp32_logits):
    kls = {s: kl(fp32_logits, q) for s, q in quantized.items()}
    assert kls["w8a8_int8"] < kls["w4a16"] / 10
    assert kls["w8a16"] <= kls["w8a8_int8"]  # quantizing activations only adds error


def test_load_time_and_post_build_quantization_agree(checkpoint, quantized):
    model = quantize_model(load_model(checkpoint, dtype=torch.float32), "w4a16", "reference", rotated=True)
    torch.testing.assert_close(logits(model), quantized["w4a16"])
    info = describe(model)
    assert info["summary"]["quant_linears"] == 2 * 4 and info["summary"]["rotated"] is True
    assert info["summary"]["quant_scheme"] == "w4a16" and info["summary"]["quant_group_size"] == "128"
    assert info["layers"]["model.layers.1.mlp.down_proj"]["backend"] == "reference"
    assert describe(quantize_model(load_model(checkpoint, dtype=torch.float32), "w8a16", "reference"))["summary"][
        "quant_group_size"] == "128 | 256"  # per-channel: a group is a whole input row
    assert not info["summary"]["quant_lm_head"] and type(model.lm_head) is torch.nn.Linear


def test_lm_head_quantized_only_when_asked(checkpoint, fp32_logits):
    q = build_quantizer("w8a16", "reference", {}, quantize_lm_head=True)
    model = load_model(checkpoint, dtype=torch.float32, quantizer=q)
    info = describe(model)
    assert info["summary"]["quant_lm_head"] and info["summary"]["quant_linears"] == 9  # qkv, o, gate_up, down; head
    assert model.lm_head.weight.numel() == 0 and isinstance(model.lm_head.quant, QuantLinear)
    assert (logits(model).argmax(-1) == fp32_logits.argmax(-1)).float().mean() >= 0.9


def test_tied_head_quantized_keeps_embedding_dense(tmp_path):
    path = tmp_path / "tied"
    tiny_hf_model("qwen3", seed=1, tie_word_embeddings=True, **SHAPE).save_pretrained(path)
    dense = load_model(str(path), dtype=torch.float32)
    model = quantize_model(load_model(str(path), dtype=torch.float32), "w8a16", "reference", quantize_lm_head=True)
    torch.testing.assert_close(model.model.embed_tokens.weight, dense.model.embed_tokens.weight, rtol=0, atol=0)
    assert describe(model)["summary"]["quant_lm_head"]
    assert (logits(model).argmax(-1) == logits(dense).argmax(-1)).float().mean() >= 0.9


def test_smoothquant_preserves_fp_model(checkpoint, fp32_logits):
    model = load_model(checkpoint, dtype=torch.float32)
    with record_act_absmax(model) as stats:
        logits(model)
    assert set(stats) >= {"model.layers.0.self_attn.qkv", "model.layers.1.mlp.down_proj"}
    before = model.model.layers[0].input_layernorm.weight.clone()
    smooth_model(model, stats, alpha=0.5)
    assert not torch.equal(before, model.model.layers[0].input_layernorm.weight)
    torch.testing.assert_close(logits(model), fp32_logits, rtol=1e-4, atol=1e-4)


def test_dense_and_auto_on_dense_checkpoints_mean_no_quantizer():
    assert build_quantizer("bf16", "reference", {}) is None
    assert build_quantizer("auto", "gemlite", {"model_type": "llama"}) is None
    with pytest.raises(QuantConfigError, match="RTN"):
        quantize_model(torch.nn.Linear(2, 2), "auto", "reference")
