"""The cache attention kernel (``model.attention``) per layer, against SDPA and a fixed merge width, in one run.

For the head layouts of Llama-3-8B (32 query heads, 8 KV heads) and -70B (64, 8), n queries (a decode step, a chain,
a tree) against a static cache of ``--slots`` slots whose first ``--context`` are committed: microseconds per call of
``masked_attention`` with the merge width ``merge_rows`` picks, with each width of ``--merge-rows``, each split count
of ``--splits`` and each partial row block of ``--row-blocks`` forced, and of SDPA with the boolean mask; and of the
cache write of the n new tokens (keys rotated) followed by the kernel, against the kernel that stores them itself.
CUDA graph of 20 calls, median of 20 replays.

    python -m benchmarks.bench_attention --out results/attention
"""

from __future__ import annotations

import json
import time

import torch
import torch.nn.functional as F

from benchmarks.common import graphed_us, smoke_parser
from specbench.model import attention, kv_cache, rope

HEADS = {"llama-3-8b": (32, 8), "llama-3-70b": (64, 8)}


def main(argv: list[str] | None = None) -> dict:
    parser = smoke_parser(__doc__, "not supported: the kernel's CPU test runs it in Triton's interpreter")
    parser.add_argument("--ns", nargs="+", type=int, default=[1, 8, 31, 64])
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--slots", type=int, default=4096)
    parser.add_argument("--merge-rows", nargs="+", type=int, default=[1, 4, 16])
    parser.add_argument("--splits", nargs="+", type=int, default=[], help="also each of these split counts, forced")
    parser.add_argument("--row-blocks", nargs="+", type=int, default=[], help="also each of these partial-program "
                        "row counts (powers of two, 16-128), forced")
    args = parser.parse_args(argv)
    if args.smoke or not torch.cuda.is_available():
        parser.error("needs a GPU")
    chosen = attention.merge_rows
    rows = []
    for model, (h, kvh) in HEADS.items():
        keys, values = torch.randn(2, 1, kvh, args.slots, 128, device="cuda", dtype=torch.bfloat16)
        for n in args.ns:
            q = torch.randn(1, h, n, 128, device="cuda", dtype=torch.bfloat16)
            mask = torch.zeros(1, 1, n, args.slots, dtype=torch.bool, device="cuda")
            mask[..., : args.context] = True
            mask[0, 0, :, args.context : args.context + n] = torch.tril(torch.ones(n, n, dtype=torch.bool))
            prepared = attention.prepare(mask)
            row = {"model": model, "n": n}
            forced = ([("kernel_us", "merge_rows", chosen)]
                      + [(f"merge{w}_us", "merge_rows", lambda *_, w=w: w) for w in args.merge_rows]
                      + [(f"splits{c}_us", "split_count", lambda *_, c=c: c) for c in args.splits]
                      + [(f"rows{b}_us", "row_block", lambda *_, b=b: b) for b in args.row_blocks])
            for label, name, rule in forced:
                default = getattr(attention, name)
                setattr(attention, name, rule)
                row[label] = graphed_us(lambda: attention.masked_attention(q, keys, values, *prepared))
                setattr(attention, name, default)
            # this forward's K/V stored (keys rotated) by the cache write then the kernel, against the kernel that
            # stores them itself (``write_and_attend``'s two paths)
            k, v = torch.randn(2, 1, kvh, n, 128, device="cuda", dtype=torch.bfloat16)
            new = torch.arange(args.context, args.context + n, device="cuda")
            tables = rope.rope_tables(1.0 / 500000 ** (torch.arange(0, 128, 2, device="cuda") / 128), new,
                                      torch.bfloat16)
            layer_kv = torch.stack([keys, values])
            row["write_then_kernel_us"] = graphed_us(lambda: (
                kv_cache.store_rows(layer_kv, new, k, v, tables),
                attention.masked_attention(q, layer_kv[0], layer_kv[1], *prepared, *tables)))
            row["storing_kernel_us"] = graphed_us(lambda: attention.masked_attention_storing(
                q, layer_kv[0], layer_kv[1], *prepared, *tables, k, v, new))
            row["sdpa_us"] = graphed_us(lambda: F.scaled_dot_product_attention(q, keys, values, attn_mask=mask,
                                                                             enable_gqa=True))
            rows.append(row)
            print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": __import__("triton").__version__,
              "date": time.strftime("%Y-%m-%d"), "context": args.context, "slots": args.slots, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "attention.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
