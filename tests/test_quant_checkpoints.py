"""GPTQ, AWQ and compressed-tensors checkpoints written here (our own writers, loop by loop from the published
layouts) load through ``build_quantizer("auto", ...)`` and reproduce the dequantized weights exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from specbench.model import ModelSourceError, load_model
from specbench.model.transformer import stacked_linears
from specbench.quantization import QuantConfigError, QuantLinear, build_quantizer, describe
from specbench.quantization.formats import pack_int32
from specbench.quantization.linear import QuantParts
from tests.conftest import tiny_hf_model
from tests.test_quant_model import logits

SHAPE = dict(hidden_size=128, intermediate_size=256)
AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # AutoAWQ's pack order, written out here rather than imported
LINEARS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
           "mlp.up_proj", "mlp.down_proj")


def int32(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a.astype(np.uint32).view(np.int32))


def pack_rows(v: np.ndarray) -> np.ndarray:
    """8 consecutive rows of 4-bit values per uint32, row 8i+j at bits 4j."""
    out = np.zeros((v.shape[0] // 8, v.shape[1]), np.uint32)
    for i in range(out.shape[0]):
        for j in range(8):
            out[i] |= v[8 * i + j].astype(np.uint32) << (4 * j)
    return out


def pack_cols(v: np.ndarray, order=tuple(range(8))) -> np.ndarray:
    """8 columns per uint32; nibble j holds column 8m + order[j]."""
    out = np.zeros((v.shape[0], v.shape[1] // 8), np.uint32)
    for m in range(out.shape[1]):
        for j in range(8):
            out[:, m] |= v[:, 8 * m + order[j]].astype(np.uint32) << (4 * j)
    return out


def random_int4(n, k, group, gen, asym, act_order=False):
    """Codes in [0, 15], zero points, fp16 scales [N, G], g_idx; and the float32 weight they mean."""
    groups = k // group
    q = torch.randint(0, 16, (n, k), generator=gen)
    z = torch.randint(3, 13, (n, groups), generator=gen) if asym else torch.full((n, groups), 8)
    s = (torch.rand(n, groups, generator=gen) * 0.02 + 0.005).half()
    g_idx = torch.arange(k) // group
    if act_order:
        g_idx = g_idx[torch.randperm(k, generator=gen)]
    w = (q - z[:, g_idx]).float() * s.float()[:, g_idx]
    return q, z, s, g_idx, w


def gptq_tensors(q, z, s, g_idx, v1=True):
    return {"qweight": int32(pack_rows(q.t().numpy())), "qzeros": int32(pack_cols((z.t() - int(v1)).numpy())),
            "scales": s.t().contiguous(), "g_idx": g_idx.int()}


def awq_tensors(q, z, s, g_idx):
    return {"qweight": int32(pack_cols(q.t().numpy(), AWQ_ORDER)), "qzeros": int32(pack_cols(z.t().numpy(), AWQ_ORDER)),
            "scales": s.t().contiguous()}


def ct_packed_tensors(q, z, s, g_idx, asym):
    out = {"weight_packed": int32(pack_cols(q.numpy())), "weight_scale": s,
           "weight_shape": torch.tensor(q.shape)}
    if asym:  # zero points (signed + 8) packed along the output dim
        out["weight_zero_point"] = int32(pack_rows(z.numpy()))
    return out


def write_checkpoint(tmp_path, quant_config, make, seed=0):
    """A tiny llama whose seven linears per layer are replaced by ``make(gen, n, k) -> (tensors, weight)``."""
    path = tmp_path / quant_config["quant_method"]
    tiny_hf_model("llama", seed=seed, **SHAPE).save_pretrained(path)
    state = {}
    for f in path.glob("*.safetensors"):
        state.update(load_file(f))
        f.unlink()
    gen = torch.Generator().manual_seed(seed)
    expected = {}
    for layer in range(2):
        for lin in LINEARS:
            name = f"model.layers.{layer}.{lin}"
            n, k = state.pop(name + ".weight").shape
            tensors, expected[name] = make(gen, n, k)
            state.update({f"{name}.{key}": t for key, t in tensors.items()})
    save_file(state, path / "model.safetensors")
    config = json.loads((path / "config.json").read_text())
    config["quantization_config"] = quant_config
    (path / "config.json").write_text(json.dumps(config))
    return path, config, expected


def part_weight(model, name: str) -> torch.Tensor:
    """The dequantized weight (input order) of checkpoint linear ``name`` inside the model's stacked linears."""
    group, _, part = name.partition(".layers.")
    index, _, part = part.partition(".")
    layer = model.get_submodule(f"{group}.layers.{index}")
    linear, parts = next(((lin, ps) for lin, ps in stacked_linears(layer).items() if part in ps),
                         (part, {part: None}))
    module = layer.get_submodule(linear)
    if isinstance(module, QuantParts):
        module, rows = module.parts[part.rpartition(".")[2]], slice(None)
    else:
        names = list(parts)
        start = sum(parts[p] for p in names[: names.index(part)])
        rows = slice(start, start + (parts[part] or module.out_features))
    assert isinstance(module, QuantLinear), name
    qw = module.kernel.weight()
    qw.perm = module.perm
    return qw.dequantize()[rows]


def load_and_compare(path, config, expected, backend="reference"):
    """Load with quant=auto and compare every linear with its dequantized reference; quant=none and a
    mismatching scheme must stop, naming the format and the setting to use."""
    method = config["quantization_config"]["quant_method"]
    with pytest.raises(ModelSourceError, match=f"{method} checkpoint .*Set quant=auto"):
        load_model(str(path), dtype=torch.float32)
    schemes = build_quantizer("auto", backend, config).info()["scheme"]
    wrong = "w8a8_fp8" if schemes == "w8a8_int8" else "w8a8_int8"
    with pytest.raises(QuantConfigError, match=f"is {method} {schemes}, not {wrong}; use scheme 'auto'"):
        build_quantizer(wrong, backend, config)
    model = load_model(str(path), dtype=torch.float32, quantizer=build_quantizer("auto", backend, config))
    for name, weight in expected.items():
        assert torch.equal(part_weight(model, name), weight), name
    return model


@pytest.mark.parametrize("asym,act_order,v1", [(False, False, True), (True, False, True), (False, True, True),
                                               (True, True, False)])
def test_gptq_checkpoint(tmp_path, asym, act_order, v1):
    def make(gen, n, k):
        q, z, s, g_idx, w = random_int4(n, k, 32, gen, asym, act_order)
        return gptq_tensors(q, z, s, g_idx, v1), w

    cfg = {"quant_method": "gptq", "bits": 4, "group_size": 32, "sym": not asym, "desc_act": act_order,
           "checkpoint_format": "gptq" if v1 else "gptq_v2"}
    path, config, expected = write_checkpoint(tmp_path, cfg, make)
    model = load_and_compare(path, config, expected)
    # different act-order perms per projection: q/k/v run as parts of one linear; else one stacked kernel
    layers = describe(model)["layers"]
    layer = layers["model.layers.0.self_attn.qkv" + (".parts.q_proj" if act_order else "")]
    assert layer["zero_point"] is asym and layer["act_order"] is act_order  # v1 "7 means 8" is symmetric
    assert act_order or layers["model.layers.0.self_attn.qkv"]["stacked"] == "q_proj+k_proj+v_proj"
    if act_order:  # the model runs the permuted layers exactly like the dense weights they stand for
        dense_state = {n + ".weight": w for n, w in expected.items()}
        reference = load_model(str(write_dense(tmp_path, path, dense_state)), dtype=torch.float32)
        torch.testing.assert_close(logits(model), logits(reference), rtol=1e-5, atol=1e-5)


def write_dense(tmp_path, quant_path, dense_state):
    """The same model with the dequantized weights stored densely."""
    path = tmp_path / "dense"
    path.mkdir()
    state = {k: v for k, v in load_file(quant_path / "model.safetensors").items()
             if not k.endswith(("qweight", "qzeros", "scales", "g_idx"))}
    save_file({**state, **dense_state}, path / "model.safetensors")
    config = json.loads((quant_path / "config.json").read_text())
    del config["quantization_config"]
    (path / "config.json").write_text(json.dumps(config))
    return path


def test_awq_gemm_checkpoint(tmp_path):
    def make(gen, n, k):
        q, z, s, g_idx, w = random_int4(n, k, 64, gen, asym=True)
        return awq_tensors(q, z, s, g_idx), w

    cfg = {"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": True, "version": "gemm"}
    model = load_and_compare(*write_checkpoint(tmp_path, cfg, make))
    layer = describe(model)["layers"]["model.layers.0.self_attn.qkv"]
    assert layer["zero_point"] is True and layer["act_order"] is False
    assert describe(model)["summary"]["quant_scheme"] == "w4a16"


@pytest.mark.parametrize("asym", [False, True])
def test_compressed_tensors_pack_quantized(tmp_path, asym):
    def make(gen, n, k):
        q, z, s, g_idx, w = random_int4(n, k, 32, gen, asym)
        return ct_packed_tensors(q, z, s, g_idx, asym), w

    weights = {"num_bits": 4, "type": "int", "symmetric": not asym, "strategy": "group", "group_size": 32}
    cfg = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
           "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": None}}}
    model = load_and_compare(*write_checkpoint(tmp_path, cfg, make))
    assert describe(model)["summary"]["quant_scheme"] == "w4a16"


@pytest.mark.parametrize("kind", ["int", "float"])
def test_compressed_tensors_w8a8(tmp_path, kind):
    def make(gen, n, k):
        s = torch.rand(n, 1, generator=gen).bfloat16() * 0.01 + 0.001
        if kind == "int":
            codes = torch.randint(-127, 128, (n, k), generator=gen, dtype=torch.int8)
        else:
            codes = (torch.randn(n, k, generator=gen) * 100).clamp(-448, 448).to(torch.float8_e4m3fn)
        return {"weight": codes, "weight_scale": s}, codes.float() * s.float()

    args = {"num_bits": 8, "type": kind, "symmetric": True, "dynamic": False}
    group = {"targets": ["re:.*_proj$"], "weights": {**args, "strategy": "channel"},
             "input_activations": {**args, "strategy": "token", "dynamic": True}}
    fmt = "int-quantized" if kind == "int" else "float-quantized"
    cfg = {"quant_method": "compressed-tensors", "format": fmt, "config_groups": {"group_0": group}, "ignore": ["lm_head"]}
    model = load_and_compare(*write_checkpoint(tmp_path, cfg, make))
    assert describe(model)["summary"]["quant_scheme"] == ("w8a8_int8" if kind == "int" else "w8a8_fp8")


def test_a_stacked_linear_of_quantized_and_dense_parts_is_refused(tmp_path):
    """q_proj quantized but k/v dense in the checkpoint: q/k/v are one linear, so the load stops naming them."""
    def make(gen, n, k):
        return {"weight": torch.randint(-127, 128, (n, k), generator=gen, dtype=torch.int8),
                "weight_scale": torch.full((n, 1), 0.01)}, None

    args = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel", "dynamic": False}
    group = {"targets": ["Linear"], "weights": args, "input_activations": {**args, "strategy": "token", "dynamic": True}}
    cfg = {"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"g": group},
           "ignore": ["lm_head"]}
    path, config, _ = write_checkpoint(tmp_path, cfg, make)
    state = load_file(path / "model.safetensors")
    for part in ("k_proj", "v_proj"):
        name = f"model.layers.0.self_attn.{part}."
        state[name + "weight"] = state[name + "weight"].float() * 0.01
        del state[name + "weight_scale"]
    save_file(state, path / "model.safetensors")
    with pytest.raises(QuantConfigError, match=r"self_attn.k_proj.*dense in the checkpoint but \['model.layers.0.self_attn.q_proj'\]"):
        load_model(str(path), dtype=torch.float32, quantizer=build_quantizer("auto", "reference", config))


def test_runner_default_quant_none_refuses_a_w8a8_checkpoint(tmp_path):
    """The runner's default (quant=none) on an int8 checkpoint stops instead of reading codes as weights;
    the same folder with its quantization_config removed stops at the int8 tensors' dtype."""
    from specbench.config import ModelConf, QuantConf
    from specbench.engine import Engine

    def make(gen, n, k):
        codes = torch.randint(-127, 128, (n, k), generator=gen, dtype=torch.int8)
        return {"weight": codes, "weight_scale": torch.full((n, 1), 0.01)}, None

    args = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel", "dynamic": False}
    group = {"targets": ["Linear"], "weights": args, "input_activations": {**args, "strategy": "token", "dynamic": True}}
    cfg = {"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"g": group},
           "ignore": ["lm_head"]}
    path, config, _ = write_checkpoint(tmp_path, cfg, make)
    engine, model_cfg = Engine(), ModelConf(source=str(path))
    with pytest.raises(ModelSourceError, match="compressed-tensors checkpoint \\(w8a8_int8\\).*quant=auto"):
        engine.model(model_cfg, QuantConf())
    del config["quantization_config"]
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelSourceError, match="q_proj.weight \\(torch.int8\\)"):
        engine.model(model_cfg, QuantConf())


def test_unsupported_quantization_config_stops_a_quant_none_load(tmp_path):
    """transformers' block-fp8 format (quant_method "fp8") is not read: quant=none stops, naming it."""
    path = tmp_path / "fp8"
    tiny_hf_model("llama", **SHAPE).save_pretrained(path)
    config = json.loads((path / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(QuantConfigError, match="quant_method 'fp8' is not supported"):
        load_model(str(path), dtype=torch.float32)


def test_mistyped_tensors_of_a_layout_are_refused(tmp_path):
    def make(gen, n, k):  # GPTQ scales stored as int32: read as is they would scale by integers
        q, z, s, g_idx, w = random_int4(n, k, 32, gen, asym=False)
        return {**gptq_tensors(q, z, s, g_idx), "scales": s.t().int().contiguous()}, w

    path, config, _ = write_checkpoint(tmp_path, {"quant_method": "gptq", "bits": 4, "group_size": 32}, make)
    with pytest.raises(QuantConfigError, match="scales has dtype torch.int32"):
        load_model(str(path), dtype=torch.float32, quantizer=build_quantizer("auto", "reference", config))


def test_packing_known_answers():
    # GPTQ packs rows 0..7 into one int32 low nibble first; AWQ interleaves columns as 0,2,4,6,1,3,5,7
    assert pack_int32(torch.arange(8).reshape(8, 1), 4, 0).item() == 0x76543210
    assert pack_int32(torch.arange(8).reshape(1, 8), 4, 1, AWQ_ORDER).item() == 0x75316420
    assert int(int32(pack_cols(np.arange(8).reshape(1, 8), AWQ_ORDER))) == 0x75316420


def test_unreadable_checkpoints_are_refused(tmp_path):
    with pytest.raises(QuantConfigError, match="gptq, awq, compressed-tensors"):
        build_quantizer("auto", "reference", {"quantization_config": {"quant_method": "hqq"}})
    with pytest.raises(QuantConfigError, match="GEMM"):
        build_quantizer("auto", "reference", {"quantization_config": {"quant_method": "awq", "version": "gemv"}})
    static = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False}
    ct = {"quant_method": "compressed-tensors", "format": "float-quantized",
          "config_groups": {"g": {"targets": ["Linear"], "weights": static, "input_activations": static}}}
    with pytest.raises(QuantConfigError, match="dynamic per-token"):
        build_quantizer("auto", "reference", {"quantization_config": ct})
    gptq = {"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}
    with pytest.raises(QuantConfigError, match="use scheme 'auto'"):
        build_quantizer("bf16", "reference", gptq)
    with pytest.raises(QuantConfigError, match="not w8a8_int8"):
        build_quantizer("w8a8_int8", "reference", gptq)
    assert build_quantizer("w4a16", "reference", gptq).info()["source"] == "gptq"
