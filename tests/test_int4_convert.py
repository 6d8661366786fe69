"""The two-per-instruction int4 -> 16-bit conversion: its PTX run by a small emulator of the three instructions it
uses (proves the selectors, masks and magic numbers), and the DEQ=3 kernel path on a GPU when there is one."""

from __future__ import annotations

import re

import pytest
import torch

from specbench.quantization.int4_convert import OFFSET, pair_asm

MASK32 = 0xFFFFFFFF


def _prmt(a: int, b: int, sel: int) -> int:
    pool = [(a >> 8 * i) & 0xFF for i in range(4)] + [(b >> 8 * i) & 0xFF for i in range(4)]
    assert all(not (sel >> 4 * i) & 8 for i in range(4)), "sign-replicating selectors are not emulated"
    return sum(pool[(sel >> 4 * i) & 7] << 8 * i for i in range(4))


def _lop3(a: int, b: int, c: int, lut: int) -> int:
    out = 0
    for bit in range(32):
        index = ((a >> bit) & 1) << 2 | ((b >> bit) & 1) << 1 | ((c >> bit) & 1)
        out |= ((lut >> index) & 1) << bit
    return out


def _packed(a: int, b: int, dtype: torch.dtype, op) -> int:
    halves = [torch.tensor([_half(v, high, dtype) for v in (a, b)], dtype=dtype) for high in (False, True)]
    out = [op(h[0], h[1]).view(torch.int16).item() & 0xFFFF for h in halves]  # rounded in dtype, as .rn
    return out[0] | out[1] << 16


def run_ptx(asm: str, inputs: dict[str, int]) -> dict[str, int]:
    """Execute the prmt.b32 / shr.b32 / lop3.b32 / mov.b32 / {sub,mul}.rn.{bf16x2,f16x2} / fma.rn.f16x2 lines of
    ``asm`` on 32-bit registers."""
    regs = dict(inputs)
    value = lambda tok: regs[tok] if tok in regs else int(tok, 0)  # noqa: E731
    for line in asm.splitlines():
        line = line.strip()
        if not line or line in "{}" or line.startswith(".reg"):
            continue
        op, args = re.fullmatch(r"(\S+)\s+(.*);", line).groups()
        dst, *src = [t.strip() for t in args.split(",")]
        vals = [value(t) for t in src]
        if op == "prmt.b32":
            regs[dst] = _prmt(*vals)
        elif op == "shr.b32":
            regs[dst] = (vals[0] & MASK32) >> vals[1]
        elif op == "lop3.b32":
            regs[dst] = _lop3(*vals)
        elif op == "mov.b32":
            regs[dst] = vals[0]
        elif op == "fma.rn.f16x2":  # one rounding, as the instruction: the product and sum exact in float64
            halves = [[_half(v, high, torch.float16) for v in vals] for high in (False, True)]
            out = [torch.tensor([a * b + c], dtype=torch.float64).to(torch.float16).view(torch.int16).item() & 0xFFFF
                   for a, b, c in halves]
            regs[dst] = out[0] | out[1] << 16
        elif op in ("sub.rn.bf16x2", "sub.rn.f16x2", "mul.rn.bf16x2", "mul.rn.f16x2"):
            fn = torch.sub if op.startswith("sub") else torch.mul
            regs[dst] = _packed(*vals, torch.bfloat16 if op.endswith("bf16x2") else torch.float16, fn)
        else:
            raise AssertionError(f"unexpected instruction {op}")
    return regs


def _half(word: int, high: bool, dtype: torch.dtype) -> float:
    bits = (word >> 16 if high else word) & 0xFFFF
    return torch.tensor([bits - (1 << 16) * (bits >= 1 << 15)], dtype=torch.int16).view(dtype).item()


def _pair(lo: float, hi: float, dtype: torch.dtype) -> int:
    bits = torch.tensor([lo, hi], dtype=dtype).view(torch.int16).tolist()
    return (bits[0] & 0xFFFF) | (bits[1] & 0xFFFF) << 16


SUBTRACTING = [("bf16", torch.bfloat16, False), ("fp16", torch.float16, False), ("fp16", torch.float16, True)]


@pytest.mark.parametrize("kind,dtype,odd_fma", SUBTRACTING)
def test_pair_asm_gives_nibble_minus_zero_point_for_both_words(kind, dtype, odd_fma):
    gen = torch.Generator().manual_seed(0)
    words = [0x76543210, 0xFEDCBA98, 0x0F0F0F0F, 0xF0F0F0F0] + torch.randint(0, 2**32, (60,), generator=gen).tolist()
    zeros = [(8, 8), (0, 15), (15, 0)] + torch.randint(0, 16, (29, 2), generator=gen).tolist()
    for a, b, (za, zb) in zip(words[::2], words[1::2], zeros):
        zoff = _pair(OFFSET[kind] + za, OFFSET[kind] + zb, dtype)
        regs = run_ptx(pair_asm(kind, odd_fma=odd_fma), {"$8": a, "$9": b, "$10": zoff})
        for j in range(8):
            out = regs[f"${j}"]
            assert _half(out, False, dtype) == ((a >> 4 * j) & 0xF) - za, (kind, hex(a), za, j)
            assert _half(out, True, dtype) == ((b >> 4 * j) & 0xF) - zb, (kind, hex(b), zb, j)


@pytest.mark.parametrize("kind,dtype", [("bf16", torch.bfloat16), ("fp16", torch.float16)])
def test_pair_asm_without_subtraction_gives_offset_plus_nibble(kind, dtype):
    gen = torch.Generator().manual_seed(1)
    words = [0x76543210, 0xFEDCBA98] + torch.randint(0, 2**32, (30,), generator=gen).tolist()
    asm = pair_asm(kind, subtract=False)
    assert "$10" not in asm
    for a, b in zip(words[::2], words[1::2]):
        regs = run_ptx(asm, {"$8": a, "$9": b})
        for j in range(8):
            assert _half(regs[f"${j}"], False, dtype) == OFFSET[kind] + ((a >> 4 * j) & 0xF), (kind, hex(a), j)
            assert _half(regs[f"${j}"], True, dtype) == OFFSET[kind] + ((b >> 4 * j) & 0xF), (kind, hex(b), j)


@pytest.mark.parametrize("kind,dtype,odd_fma", SUBTRACTING)
def test_pair_asm_with_scale_gives_the_scaled_nibble_rounded_once(kind, dtype, odd_fma):
    gen = torch.Generator().manual_seed(2)
    words = [0x76543210, 0xFEDCBA98] + torch.randint(0, 2**32, (30,), generator=gen).tolist()
    zeros = torch.randint(0, 16, (16, 2), generator=gen).tolist()
    scales = (torch.rand(16, 2, generator=gen) * 0.02 + 1e-4).to(dtype).tolist()
    for a, b, (za, zb), (sa, sb) in zip(words[::2], words[1::2], zeros, scales):
        zoff = _pair(OFFSET[kind] + za, OFFSET[kind] + zb, dtype)
        regs = run_ptx(pair_asm(kind, scale=True, odd_fma=odd_fma),
                       {"$8": a, "$9": b, "$10": zoff, "$11": _pair(sa, sb, dtype)})
        for j in range(8):
            want_lo = (torch.tensor(((a >> 4 * j) & 0xF) - za, dtype=dtype) * torch.tensor(sa, dtype=dtype)).item()
            want_hi = (torch.tensor(((b >> 4 * j) & 0xF) - zb, dtype=dtype) * torch.tensor(sb, dtype=dtype)).item()
            assert _half(regs[f"${j}"], False, dtype) == want_lo, (kind, hex(a), za, sa, j)
            assert _half(regs[f"${j}"], True, dtype) == want_hi, (kind, hex(b), zb, sb, j)


def test_pair_asm_makes_two_values_per_instruction():
    lines = [ln for ln in pair_asm("bf16").splitlines() if ln.strip().endswith(";") and not ln.startswith(".reg")]
    assert len(lines) == 24  # 16 values (8 planes x 2 words): 2 prmt, 6 shifts, 8 lop3 and 8 packed subtractions
    offset = [ln for ln in pair_asm("bf16", False).splitlines()
              if ln.strip().endswith(";") and not ln.startswith(".reg")]
    assert len(offset) == 16 and not any(ln.startswith("sub") for ln in offset)
    fp16 = [ln for ln in pair_asm("fp16", odd_fma=True).splitlines()
            if ln.strip().endswith(";") and not ln.startswith(".reg")]
    assert sum(ln.startswith("shr") for ln in fp16) == 2  # odd planes read their nibble in place (bits 4-7)
    assert len(fp16) == 23  # 2 prmt, 2 shifts, 8 lop3, 4 subtractions, 4 fma and the fma's two constants
    # bf16's 7-bit mantissa cannot hold 16 q, and planes without a subtraction gain nothing: both keep the shifts
    assert pair_asm("bf16", odd_fma=True) == pair_asm("bf16")
    assert pair_asm("fp16", subtract=False, odd_fma=True) == pair_asm("fp16", subtract=False)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (the PTX path)")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_plane_dot_path_on_cuda_matches_reference(dtype):
    from specbench.quantization import QuantLinear, get_scheme, quantize_rtn
    from specbench.quantization.int4_kernel import KernelConfig

    gen = torch.Generator(device="cuda").manual_seed(0)
    cases = [(128, True, KernelConfig("dot", 128, 128, 4, BM=16, DEQ=3)),
             (128, False, KernelConfig("dot", 64, 128, 2, BM=64, warps=8, stages=4, DEQ=3)),
             (-1, False, KernelConfig("dot", 256, 256, 1, BM=16, warps=8, DEQ=3)),
             (128, False, KernelConfig("dot", 128, 128, 4, BM=16, DEQ=4)),
             (128, False, KernelConfig("dot", 64, 128, 2, BM=64, DEQ=1)),  # lane-by-lane unpacking, permuted x
             (-1, True, KernelConfig("dot", 64, 128, 4, BM=16, DEQ=2)),
             (128, True, KernelConfig("dot", 64, 128, 2, BM=64, warps=4, stages=4, DEQ=4)),
             (-1, True, KernelConfig("dot", 256, 256, 1, BM=32, warps=8, DEQ=4)),
             (128, False, KernelConfig("dot", 256, 128, 4, BM=16, DEQ=5)),
             (-1, True, KernelConfig("dot", 128, 256, 2, BM=64, warps=8, DEQ=5)),
             (128, True, KernelConfig("dot", 128, 128, 2, BM=64, stages=4, DEQ=6)),
             (128, True, KernelConfig("dot", 256, 128, 4, BM=16, DEQ=6)),
             (-1, False, KernelConfig("dot", 128, 256, 1, BM=32, DEQ=6)),
             (128, True, KernelConfig("dot", 256, 128, 4, BM=16, DEQ=7)),  # M = 1 alone: one group per column
             (128, False, KernelConfig("dot", 128, 128, 2, BM=16, stages=4, DEQ=7)),
             (128, False, KernelConfig("dot", 64, 128, 4, BM=16, stages=5, DEQ=7)),
             (128, False, KernelConfig("dot", 128, 128, 3, BM=64, warps=8, DEQ=5, uneven=True)),  # 10, 11, 11 tiles
             (128, True, KernelConfig("dot", 128, 128, 4, BM=16, DEQ=5, uneven=True)),  # equal, per-program ranges
             (128, False, KernelConfig("dot", 64, 128, 5, BM=16, stages=4, DEQ=7, uneven=True)),  # 6 or 7 groups
             (128, False, KernelConfig("dot", 128, 128, 4, BM=16, stages=5, DEQ=9)),  # the planes scaled
             (128, True, KernelConfig("dot", 64, 128, 3, BM=32, DEQ=9, uneven=True)),
             (256, False, KernelConfig("dot", 128, 128, 2, BM=64, DEQ=9))]  # DEQ 6 and 9: 4 warps (check_shape)
    for group, sym, cfg in cases:
        qw = quantize_rtn(torch.randn(1024, 4096, device="cuda", generator=gen) * 0.02, get_scheme("w4a16"), group, sym)
        fast, ref = QuantLinear(qw, None, "triton", dtype), QuantLinear(qw, None, "reference", torch.float32)
        for m in (1,) if cfg.one_row else (1, 16, 64):
            d = cfg.as_dict()
            d.pop("path")
            fast.kernel._chosen[m] = ([1, *d.values()], "test")
            x = torch.randn(m, 4096, device="cuda", generator=gen).to(dtype)
            y, y_ref = fast(x).float(), ref(x.float())
            err = ((y - y_ref).norm() / y_ref.norm()).item()
            assert err < 1e-2, (dtype, group, sym, cfg, m, err)


def test_plane_path_compiles_for_sm90_and_costs_fewer_instructions_per_weight_than_the_gemv():
    """Ahead-of-time sm_90 cubins (no GPU needed): the PTX assembles, and the K loop issues fewer instructions."""
    import os

    triton = pytest.importorskip("triton")
    if not os.path.exists(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "nvdisasm")):
        pytest.skip("triton's bundled nvdisasm is not here")
    from tools.int4_sass import main

    planes = main(["--BM", "16", "--BN", "256", "--BK", "128", "--warps", "4", "--deq", "3"])
    gemv = main(["--gemv", "--BN", "16", "--BK", "1024", "--warps", "8", "--stages", "1", "--deq", "0"])
    assert planes < 0.6 * gemv, (planes, gemv)
    # one group per MMA column (M = 1): no subtraction, scale or zero point in the loop (606 -> 462 on Triton 3.6)
    joined = main(["--BM", "16", "--BN", "256", "--BK", "128", "--warps", "4", "--deq", "5"])
    columns = main(["--BM", "16", "--BN", "256", "--BK", "128", "--warps", "4", "--deq", "7"])
    assert columns < 0.85 * joined, (columns, joined)
    # the planes scaled in 16 bits (DEQ 9) stay in registers for the wgmma: with zero points 453 against DEQ 5's 334
    # per K step at BN 128 on Triton 3.6, 431 against 344 on 3.9 (scales read as 16-bit values sent the tile through
    # shared memory: 641)
    args = ["--BM", "16", "--BN", "128", "--BK", "128", "--warps", "4"]
    scaled, plain = main(args + ["--deq", "9", "--zeros"]), main(args + ["--deq", "5"])
    assert scaled < 1.45 * plain, (scaled, plain)


def test_programs_per_sm_follow_the_register_and_shared_memory_allocation():
    """sm_90's allocation, against what the H200 reported (cuOccupancyMaxActiveBlocksPerMultiprocessor, session 31
    call 6): 255 registers and 66,560 bytes -> 2 programs of 4 warps; 127 and 29,184 -> 4; 167 and 74,240 -> 3."""
    pytest.importorskip("triton")
    from tools.int4_sass import programs_per_sm

    def fit(registers, shared, warps=4):
        return min(programs_per_sm(registers, shared, warps).values())

    assert fit(255, 66560) == 2 and fit(127, 29184) == 4 and fit(167, 74240) == 3
    assert programs_per_sm(168, 0, 4)["registers"] == 3 and programs_per_sm(182, 0, 4)["registers"] == 2
    assert programs_per_sm(32, 115 * 1024, 4)["shared"] == 1  # two would need 232 KB with the driver's 1 KB each
    assert programs_per_sm(32, 0, 8)["warps"] == 8


def test_odd_planes_by_fma_only_on_the_tiles_that_measured_faster():
    from specbench.quantization.int4_kernel import KernelConfig, odd_fma

    def tile(bn, bm, warps, path="dot"):
        return KernelConfig(path, bn, 128, BM=bm, warps=warps)

    assert odd_fma(tile(64, 32, 4)) and odd_fma(tile(128, 64, 8))  # BM >= 32: every tile
    assert odd_fma(tile(128, 16, 4)) and odd_fma(tile(256, 16, 4))  # BM 16, 128-256 rows a warp group
    assert not odd_fma(tile(64, 16, 4)) and not odd_fma(tile(128, 16, 8))  # BM 16, 64 rows a warp group
    assert not odd_fma(tile(256, 1, 8, "gemv"))  # the gemv path makes no planes
