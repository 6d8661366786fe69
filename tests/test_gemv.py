"""The Triton decode GEMV: its arithmetic (Triton's interpreter on a CPU), its dispatch, and the model switch."""

import textwrap

import pytest
import torch

from specbench.model import gemv, load_model
from tests.conftest import run_in_interpreter

INTERPRETED = textwrap.dedent("""
    import torch
    from specbench.model import gemv
    torch.manual_seed(0)
    cases = [(70, 512, True, 4, 256), (64, 1024, False, 16, 512), (33, 256, True, 1, 256), (5, 2048, False, 8, 1024)]
    for n, k, bias, block_n, block_k in cases:
        for dtype in (torch.bfloat16, torch.float16):
            w, x = torch.randn(n, k).to(dtype), torch.randn(k).to(dtype)
            b = torch.randn(n).to(dtype) if bias else None
            y = gemv.launch(x, w, b, {"BLOCK_N": block_n, "BLOCK_K": block_k})
            ref = w.float() @ x.float() + (b.float() if bias else 0)
            assert y.dtype == dtype and y.shape == (n,), (y.dtype, y.shape)
            err = ((y.float() - ref).abs() / (ref.abs() + 1)).max().item()
            assert err < 1e-2, (n, k, dtype, err)
    print("ok")
""")


@pytest.mark.slow
def test_kernel_matches_float_reference_in_the_interpreter():
    assert run_in_interpreter(INTERPRETED) == "ok"


def test_rows_other_than_one_and_cpu_tensors_are_left_to_f_linear():
    w = torch.randn(8, 256, dtype=torch.bfloat16)
    assert not gemv.fits(torch.randn(1, 256, dtype=torch.bfloat16), w)  # CPU
    if torch.cuda.is_available():
        w = w.cuda()
        assert gemv.fits(torch.randn(1, 1, 256, dtype=torch.bfloat16, device="cuda"), w)
        assert not gemv.fits(torch.randn(2, 256, dtype=torch.bfloat16, device="cuda"), w)  # two rows
        assert not gemv.fits(torch.randn(1, 256, device="cuda"), w.float())  # float32
        assert not gemv.fits(torch.randn(1, 128, dtype=torch.bfloat16, device="cuda"), w[:, :128])  # K < 256


def test_gemv_engine_without_a_gpu_says_what_to_change(monkeypatch):
    from specbench.config import EngineConf
    from specbench.engine import Engine

    monkeypatch.setattr(gemv, "available", lambda: False)
    with pytest.raises(RuntimeError, match="engine.gemv=false"):
        Engine(EngineConf(gemv=True), device="cuda").linear()
    assert Engine(EngineConf(gemv=False), device="cuda").linear() is torch.nn.Linear
    assert Engine(EngineConf(gemv=True), device="cpu").linear() is torch.nn.Linear  # decode on a CPU: F.linear


@pytest.mark.skipif(not gemv.available(), reason="needs a CUDA GPU and triton")
def test_model_with_gemv_matches_cublas_at_decode():
    from specbench.decoding.forward import ForwardRunner
    from specbench.model import causal_mask

    def decode(linear):
        model = load_model("tiny-target", shape_only=True, device="cuda", dtype=torch.bfloat16, seed=0, linear=linear)
        runner = ForwardRunner(model, 64, cuda_graphs=True)
        ids, pos = torch.tensor([7], device="cuda"), torch.tensor([3], device="cuda")
        return model, runner(ids, pos, pos, causal_mask(3, 1, runner.total_slots, "cuda"))[0].clone()

    _, reference = decode(torch.nn.Linear)
    model, ours = decode(gemv.GemvLinear)  # captured with the GEMV
    assert sum(isinstance(m, gemv.GemvLinear) for m in model.modules()) == 4 * model.config.num_hidden_layers + 1
    assert ((ours - reference).norm() / reference.norm()).item() < 2e-2


def test_gemv_model_is_labelled_and_falls_back_off_gpu():
    """Rows say which kernel ran; off a GPU the GEMV linears compute exactly what F.linear does."""
    from specbench.decoding.forward import ForwardRunner
    from specbench.model import causal_mask
    from specbench.timing.probes import model_identity

    outputs, kernels = [], []
    for linear in (torch.nn.Linear, gemv.GemvLinear):
        model = load_model("tiny-target", shape_only=True, device="cpu", dtype=torch.float32, seed=0, linear=linear)
        runner = ForwardRunner(model, 16)
        ids, pos = torch.tensor([5, 9]), torch.arange(2)
        outputs.append(runner(ids, pos, pos, causal_mask(0, 2, runner.total_slots, "cpu"))[0])
        kernels.append(model_identity(model, "cpu")["kernel"])
    assert kernels == ["F.linear (stacked qkv, gate/up)", "Triton GEMV at 1 row, F.linear above (stacked qkv, gate/up)"]
    torch.testing.assert_close(outputs[1], outputs[0], rtol=0, atol=0)


def test_chosen_configs_name_each_autotuned_shape_for_the_result_rows(monkeypatch):
    triton = pytest.importorskip("triton")
    assert gemv.chosen_configs() == "none"  # no GEMV ran in this process
    config = triton.Config({"BLOCK_N": 2, "BLOCK_K": 2048}, num_warps=4, num_stages=1)
    monkeypatch.setattr(gemv.tuned_kernel, "cache", {(4096, 14336, "torch.bfloat16", "torch.bfloat16"): config})
    assert gemv.chosen_configs() == ("4096x14336 torch.bfloat16/torch.bfloat16: BLOCK_N 2, BLOCK_K 2048, 4 warps, "
                                     "1 stages")
