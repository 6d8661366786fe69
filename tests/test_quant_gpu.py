"""GPU backends against the reference oracle (skipped without CUDA; missing optional packages skip their cases)."""

from __future__ import annotations

import pytest
import torch

from specbench.quantization import BACKENDS, QuantLinear, UnsupportedBackendError, get_scheme, quantize_rtn

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
LAYOUTS = [("w8a8_int8", -1, True), ("w8a8_fp8", -1, True), ("w8a16", -1, True), ("w4a16", 128, True),
           ("w4a16", 128, False), ("w4a16", -1, True), ("w4a8", -1, True), ("w4a8", 128, True),
           ("w4a8_fp8", 128, True)]
CASES = [(b, *layout) for b in ("triton", "torch", "gemlite", "marlin", "fbgemm") for layout in LAYOUTS
         if layout[0] in BACKENDS[b].schemes]


@pytest.mark.parametrize("backend,scheme,group,sym", CASES)
def test_backend_matches_reference(backend, scheme, group, sym):
    gen = torch.Generator(device="cuda").manual_seed(0)
    qw = quantize_rtn(torch.randn(512, 1024, device="cuda", generator=gen) * 0.02, get_scheme(scheme), group, sym)
    qw.perm = torch.randperm(1024, device="cuda", generator=gen)
    ref = QuantLinear(qw, None, "reference", torch.bfloat16)
    try:
        fast = QuantLinear(qw, None, backend, torch.bfloat16)
    except UnsupportedBackendError as err:  # missing package or a documented layout limit: say which
        pytest.skip(str(err).split(". Combinations")[0])
    for m in (1, 7, 64):
        x = torch.randn(m, 1024, device="cuda", generator=gen, dtype=torch.bfloat16)
        y, y_ref = fast(x).float(), ref(x).float()
        assert ((y - y_ref).norm() / y_ref.norm()).item() < 2e-2, (backend, scheme, m)
