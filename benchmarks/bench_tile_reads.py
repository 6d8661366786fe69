"""How far each low-bit layer is from its tiles' memory traffic (issue #15's T(64)/T(1) floors).

    python -m benchmarks.bench_tile_reads --out DIR [--models llama-3-70b] [--schemes w4a16 w4a8] [--ms 1 16 32 64]
    python -m benchmarks.bench_tile_reads --out DIR --from-table h200 [--schemes w4a16 w4a8] [--ms 16 32 64]

For every linear shape of a model and each M, the committed table's config (``kernel_table.choose``) is timed on the
GPU beside ``tile_reads``: a kernel with the same grid (N tiles x M tiles x split) and pipeline depth that only loads
what those programs load, each tile into a dot with ones so that its loads are pipelined like the kernel's. It loads
the packed weight (as int32 [K/8, N] words, whatever the kernel's own layout; from DRAM, since the timed copies
defeat L2) and each program's activation tiles (from L2: every N tile reads the same rows again). ``tile_reads``
also runs with the weight alone, the activation alone, both with N tiles twice as wide (``reads_2bn``: half the
activation re-reads), and with the kernel's tensor-core work on top (``reads_mma``: the activation tile times a
[BK, BN] tile of ones, no dequantization). Where the real kernel takes little more than ``tile_reads``, the tiles'
traffic bounds it and only wider N tiles can help; where it takes little more than ``reads_mma``, the MMAs do; where
it takes more than both, the dequantization and the waits between them do. Two columns bound the fixed cost of a
launch: ``kernel_l2`` is the kernel over one weight copy replayed (from L2 where the weight fits in it) and ``launch``
an empty kernel with the kernel's grid and warps (``empty_grid``). Times are CUDA-graph replays
(``tune.time_config``). ``tile_reads.md`` ends with each model's linear stack (the sums over a layer's linears times
the layer count).

``--from-table GPU`` needs no GPU: for each committed entry, the weight bytes, the activation bytes its N tiles
re-read and the rate both imply at the entry's tuned time. ``--smoke`` (with ``TRITON_INTERPRET=1``) checks
``tile_reads`` under Triton's interpreter on a CPU.
"""

from __future__ import annotations

import json
import time

import torch

from benchmarks.common import smoke_parser
from specbench.quantization import kernel_table, splitk, tune
from specbench.quantization.pdl import INTERPRETED

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU check needs triton too; the project's CPU install has it
    triton = None

if triton is not None:
    @triton.jit
    def tile_reads(w_ptr, x_ptr, out_ptr, N2, x_cols, steps, STEPS_PER: tl.constexpr, BN2: tl.constexpr,
                   BM: tl.constexpr, W_ROWS: tl.constexpr, X_COLS: tl.constexpr, XN: tl.constexpr, M,
                   READ_W: tl.constexpr, READ_X: tl.constexpr):
        """Program (n tile, m tile, k part): 16 x the sum of its weight tiles [W_ROWS, BN2] per K step plus XN x the
        sum of its activation tiles [BM, X_COLS] per K step, both read as fp16 views of the bytes; one float. Each
        tile feeds a dot with ones, so Triton pipelines its loads as it does the kernels' own (async copies
        ``num_stages`` deep; loads that feed only arithmetic are not pipelined). With XN = BN the activation's dot
        does the tensor-core work of the kernel's own [BM, BK] x [BK, BN] step."""
        pid_n, pid_m, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        rn = pid_n * BN2 + tl.arange(0, BN2)
        rm = pid_m * BM + tl.arange(0, BM)
        rw, rx = tl.arange(0, W_ROWS), tl.arange(0, X_COLS)
        ones_w = tl.full((16, W_ROWS), 1.0, tl.float16)
        ones_x = tl.full((X_COLS, XN), 1.0, tl.float16)
        acc_w = tl.zeros((16, BN2), dtype=tl.float32)
        acc_x = tl.zeros((BM, XN), dtype=tl.float32)
        first = pid_k * STEPS_PER
        for s in range(first, tl.minimum(first + STEPS_PER, steps)):
            if READ_W:
                w = tl.load(w_ptr + (s * W_ROWS + rw)[:, None] * N2 + rn[None, :], mask=(rn < N2)[None, :], other=0.0)
                acc_w = tl.dot(ones_w, w, acc_w)
            if READ_X:
                x = tl.load(x_ptr + rm[:, None] * x_cols + (s * X_COLS + rx)[None, :], mask=(rm < M)[:, None],
                            other=0.0)
                acc_x = tl.dot(x, ones_x, acc_x)
        tl.store(out_ptr + (pid_k * tl.num_programs(1) + pid_m) * tl.num_programs(0) + pid_n,
                 tl.sum(tl.sum(acc_w, axis=1), axis=0) + tl.sum(tl.sum(acc_x, axis=1), axis=0))

    @triton.jit
    def empty_grid(out_ptr, flag):
        """Nothing, stored by no program (``flag`` is 0): the cost of launching and retiring a grid."""
        if flag != 0:
            tl.store(out_ptr + tl.program_id(0), 1.0)


def launch_reads(w: torch.Tensor, x: torch.Tensor, m: int, bk: int, bn: int, bm: int, split: int, stages: int,
                 warps: int, read_w: bool = True, read_x: bool = True, xn: int = 16) -> torch.Tensor:
    """``tile_reads`` over weight words ``w`` int32 [K/8, N] and activation words ``x`` int32 [M, K * bytes / 4]
    with K tiles of ``bk`` inputs (``bk`` >= 128: a dot's 16 rows of words); one float per program
    [split, M tiles, N tiles]. M tiles are at least 16 rows (a dot's), the rows past M masked off; ``xn`` is the
    width of the activation's dot (``bn``: the kernel's own tensor-core work)."""
    rows, n = w.shape
    steps = rows * 8 // bk
    per = -(-steps // split)
    bm = max(bm, 16)
    grid = (-(-n // bn), -(-m // bm), -(-steps // per))
    out = torch.empty(grid[::-1], dtype=torch.float32, device=w.device)
    wh, xh = w.view(torch.float16), x.view(torch.float16)
    tile_reads[grid](wh, xh, out, 2 * n, xh.shape[1], steps, STEPS_PER=per, BN2=2 * bn, BM=bm, W_ROWS=bk // 8,
                     X_COLS=xh.shape[1] // steps, XN=xn, M=m, READ_W=read_w, READ_X=read_x, num_warps=warps,
                     num_stages=stages)
    return out


def reference_reads(w: torch.Tensor, x: torch.Tensor, m: int, bk: int, bn: int, bm: int, split: int,
                    xn: int = 16) -> torch.Tensor:
    """What ``launch_reads`` stores, from torch ops (the CPU check; exact where the fp16 values are small integers)."""
    wh, xh = w.view(torch.float16).float(), x.view(torch.float16).float()
    rows, n = w.shape
    steps = rows * 8 // bk
    per = -(-steps // split)
    bm = max(bm, 16)
    wr, xc = bk // 8, xh.shape[1] // steps
    out = torch.zeros(-(-steps // per), -(-m // bm), -(-n // bn))
    for p in range(out.shape[0]):
        k0, k1 = p * per, min(p * per + per, steps)
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                out[p, i, j] = (16 * wh[k0 * wr:k1 * wr, 2 * j * bn:2 * (j + 1) * bn].sum()
                                + xn * xh[i * bm:(i + 1) * bm, k0 * xc:k1 * xc].sum())
    return out


def small_int_words(rows: int, cols: int, gen: torch.Generator) -> torch.Tensor:
    """int32 words [rows, cols] whose two fp16 halves are small integers (sums exact in float32)."""
    return torch.randint(-4, 5, (rows, 2 * cols), generator=gen).to(torch.float16).view(torch.int32)


def smoke() -> None:
    """``tile_reads`` under the interpreter against ``reference_reads``: ragged tiles, uneven splits, one-row M tiles
    (padded to 16), an MMA-wide activation dot, int8 and bf16 rows."""
    gen = torch.Generator().manual_seed(1)
    w = small_int_words(128 // 8 * 6, 48, gen)  # K 768, N 48
    for m, row_bytes, cases in ((7, 1, [(128, 32, 4, 2, 16), (256, 16, 8, 3, 16), (128, 64, 16, 1, 64),
                                        (128, 16, 1, 4, 16)]),
                                (5, 2, [(128, 16, 4, 4, 16)])):
        x = small_int_words(m, 768 * row_bytes // 4, gen)
        for bk, bn, bm, split, xn in cases:
            got = launch_reads(w, x, m, bk, bn, bm, split, stages=2, warps=1, xn=xn)
            assert torch.equal(got, reference_reads(w, x, m, bk, bn, bm, split, xn)), (m, bk, bn, bm, split, xn)
    print("tile_reads matches the reference (interpreter)")


def activation_bytes(scheme: str) -> int:
    """Bytes per activation element the kernel reads: bf16 rows for W4A16, int8 rows for the int8-activation schemes."""
    return 2 if scheme == "w4a16" else 1


def x_reread_bytes(scheme: str, n: int, k: int, m: int, bn: int) -> int:
    """The activation bytes a dot-path grid reads from L2: every one of its ceil(N / BN) N tiles reads all [M, K]."""
    return -(-n // bn) * m * k * activation_bytes(scheme)


def time_layer(scheme: str, n: int, k: int, group: int, m: int, gpu: str, replays: int) -> dict:
    """One shape at M rows: the table's config, the real kernel and the five ``tile_reads`` variants (µs)."""
    kernel = tune.kernel_for(scheme)
    cfg, source = kernel_table.choose(gpu, n, k, group, m, scheme)
    weight_bytes = n * k // 2
    copies = max(2, -(-tune.L2_DEFEAT_BYTES // weight_bytes))
    weights = [kernel.weight(n, k, group, seed) for seed in range(copies)]
    x = kernel.inputs(m, k)
    counters = torch.zeros(splitk.tile_counters(n, m, cfg) + 1, dtype=torch.int32, device="cuda")
    run = lambda wt: kernel.launch(cfg, x, wt, group, counters)  # noqa: E731
    real, in_l2 = tune.time_config(run, weights, replays), tune.time_config(run, weights[:1], replays)
    del weights
    sink = torch.empty(1, device="cuda")
    launch = tune.time_config(lambda _: empty_grid[splitk.grid(n, m, cfg)](sink, 0, num_warps=cfg.warps), [None],
                              replays)
    bm = 1 if cfg.path == "gemv" else cfg.BM
    words = [torch.randint(-2**31, 2**31 - 1, (k // 8, n), dtype=torch.int32, device="cuda") for _ in range(copies)]
    xw = torch.randint(-2**31, 2**31 - 1, (m, k * activation_bytes(scheme) // 4), dtype=torch.int32, device="cuda")
    reads = {}
    for name, bn, rw, rx, xn in (("reads", cfg.BN, True, True, 16), ("weight_only", cfg.BN, True, False, 16),
                                 ("x_only", cfg.BN, False, True, 16), ("reads_2bn", 2 * cfg.BN, True, True, 16),
                                 ("reads_mma", cfg.BN, True, True, cfg.BN)):
        reads[name] = tune.time_config(
            lambda wt: launch_reads(wt, xw, m, cfg.BK, bn, bm, cfg.split, max(2, cfg.stages), cfg.warps, rw, rx, xn),
            words, replays)
    x_l2_bytes = x_reread_bytes(scheme, n, k, m, cfg.BN)
    return {"scheme": scheme, "n": n, "k": k, "group": group, "M": m, "config": cfg.as_dict(), "source": source,
            "kernel_us": 1e3 * real, "kernel_l2_us": 1e3 * in_l2, "launch_us": 1e3 * launch,
            **{f"{name}_us": 1e3 * t for name, t in reads.items()},
            "weight_MB": weight_bytes / 1e6, "x_L2_MB": x_l2_bytes / 1e6,
            "reads_TBps": (weight_bytes + x_l2_bytes) / (reads["reads"] * 1e-3) / 1e12}


def table_traffic(gpu: str, schemes: list[str], ms: list[int]) -> list[dict]:
    """Per committed entry (symmetric weights) of ``gpu`` at the buckets ``ms``: weight bytes, activation bytes its
    N tiles re-read, and the rate both imply at the entry's tuned time, from the table alone (no GPU)."""
    rows = []
    for key, buckets in sorted(kernel_table.load(gpu).get("entries", {}).items()):
        scheme, n, k, group, zero_points = kernel_table.parse_key(key)
        if scheme not in schemes or zero_points:
            continue
        for bucket, entry in buckets.items():
            m, cfg = int(bucket), entry["config"]
            if m not in ms:
                continue
            weight = n * k // 2
            x_l2 = x_reread_bytes(scheme, n, k, m, cfg["BN"])
            rows.append({"scheme": scheme, "weight": f"{n}x{k}", "group": kernel_table.group_kind(k, group), "M": m,
                         "BN": cfg["BN"], "split": cfg["split"], "us": 1e3 * entry["ms"], "weight_MB": weight / 1e6,
                         "x_L2_MB": x_l2 / 1e6, "TBps": (weight + x_l2) / (entry["ms"] * 1e-3) / 1e12})
    return rows


def traffic_markdown(rows: list[dict]) -> str:
    lines = ["| scheme | N x K | group | M | BN, split | tuned µs | weight MB | x from L2 MB | (weight + x) TB/s |",
             "|" + "---|" * 9]
    lines += [f"| {r['scheme']} | {r['weight']} | {r['group']} | {r['M']} | {r['BN']}, {r['split']} | {r['us']:.1f} | "
              f"{r['weight_MB']:.0f} | {r['x_L2_MB']:.0f} | {r['TBps']:.2f} |" for r in rows]
    return "\n".join(lines) + "\n"


def markdown(rows: list[dict]) -> str:
    lines = ["| scheme | model, layer | N x K | M | BN x BK, split | kernel µs | one copy (L2) | empty grid "
             "| reads µs | weight only | x only | reads, 2 BN | reads + MMA | x from L2 MB | weight MB "
             "| kernel / reads |",
             "|" + "---|" * 16]
    for r in rows:
        c = r["config"]
        lines.append(f"| {r['scheme']} | {r['model']} {r['layer']} | {r['n']}x{r['k']} | {r['M']} | "
                     f"{c['BN']} x {c['BK']}, {c['split']} | {r['kernel_us']:.1f} | {r['kernel_l2_us']:.1f} | "
                     f"{r['launch_us']:.1f} | {r['reads_us']:.1f} | "
                     f"{r['weight_only_us']:.1f} | {r['x_only_us']:.1f} | {r['reads_2bn_us']:.1f} | "
                     f"{r['reads_mma_us']:.1f} | {r['x_L2_MB']:.0f} | {r['weight_MB']:.0f} | "
                     f"{r['kernel_us'] / r['reads_us']:.2f} |")
    return "\n".join(lines) + "\n"


def stack_totals(rows: list[dict]) -> list[dict]:
    """Per model, scheme, group and M whose every linear was timed: the kernel's, the reads' and the reads + MMA's
    µs summed over one layer's linears, times the layer count, in ms (what a forward's linears would take)."""
    stacks: dict[tuple, dict] = {}
    for r in rows:
        group = kernel_table.group_kind(r["k"], r["group"])
        key = (r["model"], r["scheme"], group, r["M"])
        total = stacks.setdefault(key, {"model": r["model"], "scheme": r["scheme"], "group": group, "M": r["M"],
                                        "linears": 0, "kernel_ms": 0.0, "reads_ms": 0.0, "reads_mma_ms": 0.0})
        total["linears"] += 1
        for name in ("kernel", "reads", "reads_mma"):
            total[f"{name}_ms"] += r[f"{name}_us"] * r["layers"] / 1e3
    return [t for t in stacks.values() if t["linears"] == 4]


def stacks_markdown(stacks: list[dict]) -> str:
    lines = ["| model | scheme | group | M | kernel ms | reads ms | reads + MMA ms | kernel - (reads + MMA) ms |",
             "|" + "---|" * 8]
    lines += [f"| {t['model']} | {t['scheme']} | {t['group']} | {t['M']} | {t['kernel_ms']:.3f} | "
              f"{t['reads_ms']:.3f} | {t['reads_mma_ms']:.3f} | {t['kernel_ms'] - t['reads_mma_ms']:.3f} |"
              for t in stacks]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = smoke_parser(__doc__, "check tile_reads under Triton's interpreter (no GPU)")
    parser.add_argument("--models", nargs="+", default=["llama-3-70b"], choices=sorted(tune.MODELS))
    parser.add_argument("--schemes", nargs="+", default=["w4a16", "w4a8"], choices=["w4a16", "w4a8"])
    parser.add_argument("--groups", nargs="+", type=int, default=[128], help="128, or -1 for per-channel")
    parser.add_argument("--ms", nargs="+", type=int, default=[1, 16, 32, 64])
    parser.add_argument("--replays", type=int, default=20)
    parser.add_argument("--from-table", metavar="GPU", help="no GPU: each committed entry's traffic at its tuned time")
    args = parser.parse_args(argv)
    if args.from_table:
        args.out.mkdir(parents=True, exist_ok=True)
        text = traffic_markdown(table_traffic(args.from_table, args.schemes, args.ms))
        (args.out / "table_traffic.md").write_text(text)
        return print(text)
    if args.smoke != INTERPRETED:
        parser.error("--smoke runs under Triton's interpreter (set TRITON_INTERPRET=1), the timing on a GPU without it")
    if args.smoke:
        return smoke()
    gpu = kernel_table.gpu_key()
    rows, t0 = [], time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    for model in args.models:
        shapes, layers = tune.model_shapes(model)
        for scheme in args.schemes:
            for group in args.groups:
                for m in args.ms:
                    for layer, k, n in shapes:
                        rows.append({"model": model, "layers": layers, "layer": layer,
                                     **time_layer(scheme, n, k, k if group == -1 else group, m, gpu, args.replays)})
                        r = rows[-1]
                        print(f"{model} {scheme} g{group} {layer} M={m}: kernel {r['kernel_us']:.1f} µs (one copy "
                              f"{r['kernel_l2_us']:.1f}, empty grid {r['launch_us']:.1f}), reads "
                              f"{r['reads_us']:.1f} (weight {r['weight_only_us']:.1f}, x {r['x_only_us']:.1f}, 2 BN "
                              f"{r['reads_2bn_us']:.1f}, + MMA {r['reads_mma_us']:.1f}), "
                              f"{r['reads_TBps']:.2f} TB/s through L2", flush=True)
                        result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                                  "triton": triton.__version__, "elapsed_s": time.monotonic() - t0, "rows": rows}
                        (args.out / "tile_reads.json").write_text(json.dumps(result, indent=1))
    stacks = stacks_markdown(stack_totals(rows))
    (args.out / "tile_reads.md").write_text(markdown(rows) + "\n" + stacks)
    print(stacks)


if __name__ == "__main__":
    main()
