"""Session 55 probe: does Triton's Hopper warp specialisation take an int4 weight tile dequantized in registers
before a tl.dot, and is it faster at M = 64 than the same loop without it?

A minimal W4A16 g128 matmul, not specbench's kernel: weight bytes [N, K / 2] (low nibble first along K, code - 8),
fp16 scales [K / 128, N], both loaded through host tensor descriptors; one program per 128-column tile, K steps of
128 (one group). Variants: warp_specialize False / True, for each M. Prints compile errors, the worst relative error
against an fp32 matmul of the dequantized weight, and the median time (CUDA events over graph replays).

    python ws_probe.py [--n 57344] [--k 8192] [--ms 1 16 64]
"""

import argparse
import os

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def w4_mm(x_desc, w_desc, s_desc, out_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
          WS: tl.constexpr, STAGES: tl.constexpr):
    n0 = tl.program_id(0) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for kk in tl.range(0, K // BK, num_stages=STAGES, warp_specialize=WS):
        x = x_desc.load([0, kk * BK])
        packed = w_desc.load([n0, kk * (BK // 2)])
        scale = s_desc.load([kk, n0]).reshape(BN, 1)
        lo = (packed & 0xF).to(tl.int8) - 8
        hi = (packed >> 4).to(tl.int8) - 8
        w = tl.join(lo, hi).reshape(BN, BK).to(tl.float16) * scale
        acc = tl.dot(x, tl.trans(w), acc)
    rows = tl.arange(0, BM)[:, None]
    cols = n0 + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + rows * N + cols, acc.to(tl.float16), mask=(rows < M) & (cols < N))


def run(x, wq, scales, n, k, ws, bm):
    m = x.shape[0]
    xp = torch.zeros(bm, k, dtype=x.dtype, device=x.device)
    xp[:m] = x
    out = torch.empty(m, n, dtype=torch.float16, device=x.device)
    xd = TensorDescriptor.from_tensor(xp, [bm, 128])
    wd = TensorDescriptor.from_tensor(wq, [128, 64])
    sd = TensorDescriptor.from_tensor(scales, [1, 128])
    grid = (n // 128,)
    def fn():
        w4_mm[grid](xd, wd, sd, out, m, n, k, BM=bm, BN=128, BK=128, WS=ws, STAGES=3, num_warps=4)

    return fn, out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=57344)
    p.add_argument("--k", type=int, default=8192)
    p.add_argument("--ms", type=int, nargs="+", default=[1, 16, 64])
    a = p.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    g = torch.Generator(device="cpu").manual_seed(0)
    codes = torch.randint(0, 16, (a.n, a.k), generator=g, dtype=torch.uint8)
    wq = (codes[:, 0::2] | (codes[:, 1::2] << 4)).contiguous().to(dev)
    scales = (torch.rand(a.k // 128, a.n, generator=g) * 0.02 + 0.01).half()
    w = ((codes.float() - 8) * scales.T.float().repeat_interleave(128, 1)).to(dev)
    scales = scales.to(dev)
    for m in a.ms:
        x = (torch.randn(m, a.k, generator=g) * 0.5).half().to(dev)
        ref = x.float() @ w.T
        bm = max(16, triton.next_power_of_2(m))
        times = {}
        for ws in (False, True):
            try:
                fn, out = run(x, wq, scales, a.n, a.k, ws, bm)
                fn()
                err = ((out.float() - ref).norm() / ref.norm()).item()
                if dev == "cuda":
                    torch.cuda.synchronize()
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        for _ in range(8):
                            fn()
                    samples = []
                    for _ in range(20):
                        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        s.record(); graph.replay(); e.record(); torch.cuda.synchronize()
                        samples.append(s.elapsed_time(e) * 1e3 / 8)
                    times[ws] = sorted(samples)[len(samples) // 2]
                timed = f", {times[ws]:.1f} us" if ws in times else ""
                print(f"M={m} warp_specialize={ws}: rel err {err:.2e}{timed}", flush=True)
            except Exception as err:  # the probe's question is whether it compiles
                print(f"M={m} warp_specialize={ws}: {type(err).__name__}: {str(err).splitlines()[0][:300]}", flush=True)
        if len(times) == 2:
            print(f"M={m}: with / without warp specialisation {times[True] / times[False]:.3f}", flush=True)


if __name__ == "__main__":
    main()
