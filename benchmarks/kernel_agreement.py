"""specbench's own low-bit kernels against ``reference``: every shipped linear shape, weight layout, activation dtype
and M = 1...128 (issue #15's acceptance).

Each item is one (layout, [N, K] shape, dtype): a random weight quantized by RTN, loaded through ``QuantLinear`` as
a user's checkpoint is (the ``triton`` backend's packing, its table or heuristic config per M), run eagerly on the
first M rows of one input for every M, and compared with the fp32 ``reference`` result of the same rows (row by
row independent, so it is computed once at the largest M). The bound is the issue's: relative Frobenius error
<= 1e-2 for 4-bit weights, <= 5e-3 for 8-bit. A layout the kernel refuses for a shape is recorded with the
refusal's message. Items run in ``--workers`` spawned processes (compilation dominates); each finished item is
written to ``kernel_agreement.json`` at once, and a rerun with the same ``--out`` skips the items it holds, so a
cut-off run resumes. An item that runs out of GPU memory beside the other workers is run again alone after them
(and on resume). ``--smoke`` runs tiny shapes on the CPU, under Triton's interpreter (``TRITON_INTERPRET=1``).

    python -m benchmarks.kernel_agreement --out results/kernel_agreement   # from the repository root
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
from dataclasses import asdict, astuple, dataclass

import torch

from benchmarks.common import smoke_parser
from specbench.atomic import write_text_atomic
from specbench.quantization import BACKENDS, QuantLinear, UnsupportedBackendError, get_scheme, quantize_rtn
from specbench.quantization.pdl import INTERPRETED
from specbench.quantization.tune import MODELS, model_shapes
from specbench.runner.environment import environment

TOLERANCE = {4: 1e-2, 8: 5e-3}  # by weight bits: issue #15's bounds
# (scheme, group size, zero points, act order): the layouts the triton backend loads
LAYOUTS = [("w4a16", 128, False, False), ("w4a16", 128, True, False), ("w4a16", 128, False, True),
           ("w4a16", -1, False, False), ("w4a16", -1, True, False), ("w4a8", -1, False, False),
           ("w4a8", 128, False, False), ("w8a8_int8", -1, False, False)]
DTYPES = ("bfloat16", "float16")
SMOKE_SHAPES = [(64, 256), (96, 384)]  # (N, K): one split-K-able, one with K of three groups
SMOKE_MS = (1, 2, 5, 16, 17, 33)


@dataclass(frozen=True)
class Item:
    backend: str
    scheme: str
    group_size: int
    zero_points: bool
    act_order: bool
    dtype: str
    n: int
    k: int

    @classmethod
    def of(cls, row: dict) -> Item:
        return cls(*(row[f] for f in cls.__dataclass_fields__))


def shipped_shapes() -> dict[tuple[int, int], list[str]]:
    """Each distinct (N, K) of the shipped models' linears, with the models that run it."""
    shapes: dict[tuple[int, int], list[str]] = {}
    for model in MODELS:
        for _, k, n in model_shapes(model)[0]:
            shapes.setdefault((n, k), [])
            if model not in shapes[(n, k)]:
                shapes[(n, k)].append(model)
    return shapes


def check(item: Item, ms: tuple[int, ...], device: str, seed: int = 0) -> dict:
    """Relative error of ``item.backend`` against fp32 ``reference`` at each M, or the refusal."""
    dtype = getattr(torch, item.dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    w = torch.randn(item.n, item.k, device=device, generator=gen) * 0.02
    qw = quantize_rtn(w, get_scheme(item.scheme), item.group_size, not item.zero_points)
    if item.act_order:
        qw.perm = torch.randperm(item.k, device=device, generator=gen)
    started = time.monotonic()
    try:
        fast = QuantLinear(qw, None, item.backend, dtype)
    except UnsupportedBackendError as err:
        return {"refused": str(err).split(". Combinations")[0]}
    x = torch.randn(max(ms), item.k, device=device, generator=gen).to(dtype)
    with torch.no_grad():
        ref = QuantLinear(qw, None, "reference", torch.float32)(x.float())
        errors, sources = [], {}
        for m in ms:
            y = fast(x[:m]).float()
            errors.append(((y - ref[:m]).norm() / ref[:m].norm()).item())
            if hasattr(fast.kernel, "config"):  # specbench's Triton layers: table entry or heuristic
                source = fast.kernel.config(m)[1]
                sources[source] = sources.get(source, 0) + 1
    worst = max(range(len(ms)), key=lambda i: errors[i])
    bound = TOLERANCE[qw.scheme.bits]
    return {"ms": list(ms), "rel_errors": errors, "worst_rel_error": errors[worst], "worst_m": ms[worst],
            "tolerance": bound, "ok": errors[worst] <= bound, "config_sources": sources,
            "kernel": fast.info["kernel"], "seconds": time.monotonic() - started}


def _work(job: tuple[Item, tuple[int, ...], str]) -> tuple[Item, dict]:
    item, ms, device = job
    if device == "cpu":  # --smoke: the interpreter runs the kernels on CPU tensors, in this process too
        BACKENDS["triton"].cuda_only = False
        torch.set_num_threads(1)  # tiny matmuls: threads only contend
    try:
        return item, check(item, ms, device)
    except Exception as err:  # noqa: BLE001 - a kernel that fails is a result; the other items go on
        return item, {"failed": f"{type(err).__name__}: {str(err)[:500]}", "ok": False}


def _out_of_memory(outcome: dict) -> bool:
    return outcome.get("failed", "").startswith("OutOfMemoryError")


def summary(rows: list[dict]) -> str:
    """Markdown: one line per backend, layout and dtype, its worst item, how many items passed or were refused,
    and where their configs came from (table entry or heuristic, counted over M values)."""
    lines = ["| backend | scheme | group | zero points | act order | dtype | items ok | refused | failed | "
             "worst rel. error (shape, M) | bound | configs (M values) |", "|---" * 12 + "|"]
    layout = lambda r: tuple(r[f] for f in list(Item.__dataclass_fields__)[:6])  # noqa: E731 - all but the shape
    for this in dict.fromkeys(map(layout, rows)):
        mine = [r for r in rows if layout(r) == this]
        run = [r for r in mine if "worst_rel_error" in r]
        worst = max(run, key=lambda r: r["worst_rel_error"], default=None)
        where = (f"{worst['worst_rel_error']:.2e} ({worst['n']}x{worst['k']}, M={worst['worst_m']})"
                 if worst else "-")
        bound = worst["tolerance"] if worst else "-"
        sources: dict[str, int] = {}
        for r in run:
            for source, count in r["config_sources"].items():
                sources[source] = sources.get(source, 0) + count
        configs = ", ".join(f"{source} {count}" for source, count in sorted(sources.items())) or "-"
        lines.append(f"| {' | '.join(map(str, this))} | {sum(r.get('ok', False) for r in run)} of {len(run)} | "
                     f"{sum('refused' in r for r in mine)} | {sum('failed' in r for r in mine)} | {where} | {bound} | "
                     f"{configs} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = smoke_parser(__doc__, "tiny shapes on the CPU under Triton's interpreter (TRITON_INTERPRET=1)")
    parser.add_argument("--max-m", type=int, default=128, help="check M = 1 ... this")
    parser.add_argument("--backend", default="triton", help="the backend checked (its layouts that it refuses are "
                        "recorded as refused)")
    parser.add_argument("--schemes", nargs="+", default=None, help="only these schemes")
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    parser.add_argument("--workers", type=int, default=12, help="processes checking items in parallel (0: this one)")
    parser.add_argument("--budget-s", type=float, default=540.0, help="stop starting items after this many seconds")
    args = parser.parse_args(argv)
    if args.smoke and not INTERPRETED:
        parser.error("--smoke runs the kernels under Triton's interpreter: set TRITON_INTERPRET=1")
    if not args.smoke and not torch.cuda.is_available():
        parser.error("no CUDA device; use --smoke (with TRITON_INTERPRET=1) for the CPU check")
    device = "cpu" if args.smoke else "cuda"
    ms = SMOKE_MS if args.smoke else tuple(range(1, args.max_m + 1))
    shapes = {s: ["smoke"] for s in SMOKE_SHAPES} if args.smoke else shipped_shapes()
    items = [Item(args.backend, s, g, zp, ao, dt, n, k) for s, g, zp, ao in LAYOUTS
             if args.schemes is None or s in args.schemes for dt in args.dtypes for n, k in shapes
             # the interpreter's tl.dot misreads bf16 operands made by a cast (tests/test_quant_triton.py)
             if not (args.smoke and s == "w4a16" and dt == "bfloat16")]
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "kernel_agreement.json"
    result = json.loads(path.read_text()) if path.exists() else {"rows": [], "runs": []}
    result["rows"] = [r for r in result["rows"] if not _out_of_memory(r)]  # retried, with the others done
    done = set(map(Item.of, result["rows"]))
    todo = [i for i in items if i not in done]
    result["runs"].append({**environment(device), "command": "python -m benchmarks.kernel_agreement "
                           + " ".join(sys.argv[1:] if argv is None else argv), "backend": args.backend,
                           "ms": [min(ms), max(ms)], "items": len(todo)})

    crowded: list[Item] = []  # ran out of GPU memory beside the other workers: retried alone in this process

    def record(item: Item, outcome: dict) -> None:
        if _out_of_memory(outcome) and args.workers and item not in crowded:
            crowded.append(item)
            return
        result["rows"].append({**asdict(item), "models": shapes[(item.n, item.k)], **outcome})
        result["rows"].sort(key=lambda r: astuple(Item.of(r)))
        write_text_atomic(path, json.dumps(result, indent=1))
        write_text_atomic(args.out / "kernel_agreement.md", summary(result["rows"]))
        status = outcome.get("refused") or outcome.get("failed") or \
            f"worst {outcome['worst_rel_error']:.2e} at M={outcome['worst_m']} ({'ok' if outcome['ok'] else 'FAIL'})"
        print(f"{item.backend} {item.scheme} g{item.group_size} zp={item.zero_points} act_order={item.act_order} "
              f"{item.dtype} {item.n}x{item.k}: {status}", flush=True)

    deadline = time.monotonic() + args.budget_s
    jobs = [(item, ms, device) for item in todo]
    if args.workers == 0:
        for job in jobs:
            if time.monotonic() > deadline:
                break
            record(*_work(job))
    elif jobs:
        pool = multiprocessing.get_context("spawn").Pool(min(args.workers, len(jobs)))
        try:
            results = pool.imap_unordered(_work, jobs)
            for _ in jobs:
                record(*results.next(max(1.0, deadline - time.monotonic())))
        except multiprocessing.TimeoutError:
            print(f"budget of {args.budget_s:.0f} s spent; rerun with the same --out to resume", flush=True)
        finally:
            pool.terminate()
            pool.join()
        for item in crowded:
            if time.monotonic() > deadline:
                break
            record(*_work((item, ms, device)))
    result["left"] = len(set(items) - set(map(Item.of, result["rows"])))
    write_text_atomic(path, json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
