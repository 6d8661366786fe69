"""The Triton decode GEMV: its arithmetic (Triton's interpreter on a CPU), its dispatch, and the model switch."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from specbench.model import gemv, load_model

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
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", INTERPRETED], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


def test_rows_other_than_one_and_cpu_tensors_are_left_to_f_linear():
    w = torch.randn(8, 256, dtype=torch.bfloat16)
    assert not gemv.fits(torch.randn(1, 256, dtype=torch.bfloat16), w)  # CPU
    if torch.cuda.is_available():
        w = w.cuda()
        assert gemv.fits(torch.randn(1, 1, 256, dtype=torch.bfloat16, device="cuda"), w)
        assert not gemv.fits(torch.randn(2, 256, dtype=torch.bfloat16, device="cuda"), w)  # two rows
        assert not gemv.fits(torch.randn(1, 256, device="cuda"), w.float())  # float32
        assert not gemv.fits(torch.randn(1, 128, dtype=torch.bfloat16, device="cuda"), w[:, :128])  # K < 256


def test_use_gemv_without_a_gpu_says_what_to_change(monkeypatch):
    monkeypatch.setattr(gemv, "available", lambda: False)
    model = load_model("tiny-target", shape_only=True, device="cpu", dtype=torch.float32)
    with pytest.raises(RuntimeError, match="engine.gemv=false"):
        model.use_gemv()


@pytest.mark.skipif(not gemv.available(), reason="needs a CUDA GPU and triton")
def test_model_with_gemv_matches_cublas_at_decode():
    from specbench.decoding.forward import ForwardRunner
    from specbench.model import causal_mask

    model = load_model("tiny-target", shape_only=True, device="cuda", dtype=torch.bfloat16, seed=0)
    model.fuse_projections()
    runner = ForwardRunner(model, 64, cuda_graphs=True)
    ids, pos = torch.tensor([7], device="cuda"), torch.tensor([3], device="cuda")
    mask = causal_mask(3, 1, runner.total_slots, "cuda")
    reference = runner(ids, pos, pos, mask, graph=False)[0].clone()
    assert model.use_gemv() == 9 * model.config.num_hidden_layers + 1  # 7 linears, attention, MLP; LM head
    ours = runner(ids, pos, pos, mask)[0]  # captured with the GEMV
    assert ((ours - reference).norm() / reference.norm()).item() < 2e-2


def test_switched_model_is_labelled_and_falls_back_off_gpu(monkeypatch):
    """Rows say which kernel ran; off a GPU the switched linears compute exactly what F.linear does."""
    from specbench.decoding.forward import ForwardRunner
    from specbench.model import causal_mask
    from specbench.timing.probes import model_identity

    model = load_model("tiny-target", shape_only=True, device="cpu", dtype=torch.float32, seed=0)
    model.fuse_projections()
    runner = ForwardRunner(model, 16)
    ids, pos = torch.tensor([5, 9]), torch.arange(2)
    mask = causal_mask(0, 2, runner.total_slots, "cpu")
    before = runner(ids, pos, pos, mask)[0].clone()
    assert model_identity(model, "cpu")["kernel"] == "F.linear (stacked qkv, gate/up)"
    monkeypatch.setattr(gemv, "available", lambda: True)
    model.use_gemv()
    assert model_identity(model, "cpu")["kernel"] == "Triton GEMV at 1 row, F.linear above (stacked qkv, gate/up)"
    torch.testing.assert_close(runner(ids, pos, pos, mask)[0], before, rtol=0, atol=0)
