"""How fast one launch can read a weight's bytes on this GPU: a floor under any kernel launched per linear.

    python -m benchmarks.bench_stream_floor --out DIR [--models llama-3-8b llama-3-70b] [--bits 4]

For every linear of a model, ``stream`` reads the packed weight's bytes (N x K x bits / 8) once and folds them to one
word per program (so no load is dead), over a grid of chunk sizes, chunks per program and warp counts; each is timed
as CUDA-graph replays over copies that defeat L2 (``tune.time_config``), and the fastest is that weight's floor.
``stream_floor.md`` sums the floors per layer times the layer count (the stack no per-linear kernel can beat) beside
the copy roofline (the bytes at this run's device-to-device copy rate), so the gap between the two is what small
launches cost here: ramp-up, tail and launch. ``--smoke`` (with ``TRITON_INTERPRET=1``) checks ``stream`` under
Triton's interpreter on a CPU.
"""

from __future__ import annotations

import itertools
import json
import time

import numpy as np
import torch

from benchmarks.common import copy_bandwidth, smoke_parser
from specbench.quantization import tune
from specbench.quantization.pdl import INTERPRETED

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU check needs triton too; the project's CPU install has it
    triton = None

CHUNKS = (1024, 2048, 4096, 8192)  # int32 words a program loads at once: 4-32 KB
PER_PROGRAM = (1, 2, 4)  # chunks a program loads, all in flight together
WARPS = (4, 8)

if triton is not None:
    @triton.jit
    def stream(src_ptr, out_ptr, n_words, CHUNK: tl.constexpr, PER: tl.constexpr):
        """Program p: the XOR of int32 words [p * PER * CHUNK, (p + 1) * PER * CHUNK) of ``src`` (those past
        ``n_words`` read as 0) -> ``out[p]``. The PER loads do not depend on each other, so all are in flight."""
        pid = tl.program_id(0)
        offs = tl.arange(0, CHUNK)
        acc = tl.zeros((CHUNK,), tl.int32)
        for i in tl.static_range(PER):
            idx = (pid * PER + i) * CHUNK + offs
            acc ^= tl.load(src_ptr + idx, mask=idx < n_words, other=0)
        tl.store(out_ptr + pid, tl.xor_sum(acc, 0))


def launch_stream(words: torch.Tensor, chunk: int, per: int, warps: int) -> torch.Tensor:
    """``stream`` over the int32 ``words`` (1-D): one XOR per program."""
    programs = triton.cdiv(words.numel(), chunk * per)
    out = torch.empty(programs, dtype=torch.int32, device=words.device)
    stream[(programs,)](words, out, words.numel(), CHUNK=chunk, PER=per, num_warps=warps)
    return out


def reference_stream(words: torch.Tensor, chunk: int, per: int) -> torch.Tensor:
    """What ``launch_stream`` stores, from numpy."""
    span = chunk * per
    padded = np.zeros(-(-words.numel() // span) * span, dtype=np.int32)
    padded[:words.numel()] = words.numpy()
    return torch.from_numpy(np.bitwise_xor.reduce(padded.reshape(-1, span), axis=1))


def smoke() -> None:
    """``stream`` under the interpreter against ``reference_stream``: ragged last programs, several chunks each."""
    gen = torch.Generator().manual_seed(1)
    words = torch.randint(-2**31, 2**31 - 1, (5000,), dtype=torch.int32, generator=gen)
    for chunk, per in ((256, 1), (512, 3), (1024, 2)):
        got = launch_stream(words, chunk, per, warps=1)
        assert torch.equal(got, reference_stream(words, chunk, per)), (chunk, per)
    print("stream matches the reference (interpreter)")


def floor_of(nbytes: int, replays: int) -> dict:
    """The fastest ``stream`` grid over ``nbytes`` (a multiple of 4), µs per launch, from weights past L2."""
    copies = max(2, -(-tune.L2_DEFEAT_BYTES // nbytes))
    weights = [torch.randint(-2**31, 2**31 - 1, (nbytes // 4,), dtype=torch.int32, device="cuda")
               for _ in range(copies)]
    times = {(chunk, per, warps): 1e3 * tune.time_config(lambda w: launch_stream(w, chunk, per, warps), weights,
                                                         replays)
             for chunk, per, warps in itertools.product(CHUNKS, PER_PROGRAM, WARPS)}
    (chunk, per, warps), best = min(times.items(), key=lambda kv: kv[1])
    return {"bytes": nbytes, "floor_us": best, "chunk_bytes": 4 * chunk, "chunks_per_program": per, "warps": warps,
            "TBps": nbytes / best / 1e6, "grids": {f"{4 * c}B x {p}, {w} warps": t for (c, p, w), t in times.items()}}


def markdown(rows: list[dict], stacks: list[dict]) -> str:
    lines = ["| model, layer | N x K | MB | floor µs | TB/s | grid (chunk x per program, warps) |",
             "|" + "---|" * 6]
    lines += [f"| {r['model']} {r['layer']} | {r['n']}x{r['k']} | {r['bytes'] / 1e6:.1f} | {r['floor_us']:.1f} | "
              f"{r['TBps']:.2f} | {r['chunk_bytes'] // 1024} KB x {r['chunks_per_program']}, {r['warps']} |"
              for r in rows]
    lines += ["", "| model | bits | stack floor ms | copy roofline ms | floor / roofline |", "|" + "---|" * 5]
    lines += [f"| {s['model']} | {s['bits']} | {s['floor_ms']:.3f} | {s['roofline_ms']:.3f} | "
              f"{s['floor_ms'] / s['roofline_ms']:.2f} |" for s in stacks]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = smoke_parser(__doc__, "check stream under Triton's interpreter (no GPU)")
    parser.add_argument("--models", nargs="+", default=["llama-3-8b", "llama-3-70b"], choices=sorted(tune.MODELS))
    parser.add_argument("--bits", type=int, default=4, choices=[4, 8], help="weight bits (packed bytes per weight)")
    parser.add_argument("--replays", type=int, default=20)
    args = parser.parse_args(argv)
    if args.smoke != INTERPRETED:
        parser.error("--smoke runs under Triton's interpreter (set TRITON_INTERPRET=1), the timing on a GPU without it")
    if args.smoke:
        return smoke()
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    copy = copy_bandwidth("cuda", 1 << 30)
    rows, stacks = [], []
    for model in args.models:
        shapes, layers = tune.model_shapes(model)
        for layer, k, n in shapes:
            rows.append({"model": model, "layer": layer, "n": n, "k": k, **floor_of(n * k * args.bits // 8,
                                                                                     args.replays)})
            r = rows[-1]
            print(f"{model} {layer} {n}x{k}: {r['bytes'] / 1e6:.1f} MB in {r['floor_us']:.1f} µs "
                  f"({r['TBps']:.2f} TB/s; {r['chunk_bytes'] // 1024} KB x {r['chunks_per_program']}, "
                  f"{r['warps']} warps)", flush=True)
        mine = rows[-len(shapes):]
        stacks.append({"model": model, "bits": args.bits, "layers": layers,
                       "floor_ms": layers * sum(r["floor_us"] for r in mine) / 1e3,
                       "roofline_ms": layers * sum(r["bytes"] for r in mine) / copy["bandwidth_Bps"] * 1e3})
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "copy_bandwidth_Bps": copy["bandwidth_Bps"], "elapsed_s": time.monotonic() - t0, "rows": rows,
              "stacks": stacks}
    (args.out / "stream_floor.json").write_text(json.dumps(result, indent=1))
    text = markdown(rows, stacks)
    (args.out / "stream_floor.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
