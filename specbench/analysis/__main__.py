"""``python -m specbench.analysis tables|plots``: regenerate the paper tables and the figures from result files."""

from __future__ import annotations

import argparse
from pathlib import Path

from specbench.analysis.bootstrap import N_BOOT


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(prog="python -m specbench.analysis", description=__doc__)
    parser.add_argument("what", choices=["tables", "plots"])
    parser.add_argument("--results", nargs="+", default=["results"], help="folders, files or globs of run folders")
    parser.add_argument("--out", type=Path, help="default: docs/tables or docs/figures")
    parser.add_argument("--manifests", type=Path, default=Path("experiments"), help="folder of per-paper YAML")
    parser.add_argument("--bench", nargs="*", default=None,
                        help="quant_linear.json files (default: those found under --results)")
    parser.add_argument("--n-boot", type=int, default=N_BOOT)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from specbench.analysis.pool import Pool
    from specbench.analysis.load import available_columns, load_probes, load_results

    columns = [c for c in available_columns(args.results) if c not in ("answer", "accept_lengths")]
    pool = Pool(load_results(args.results, columns=columns, steps=True), load_probes(args.results))
    if args.what == "tables":
        from specbench.analysis.manifest import load_all
        from specbench.analysis.tables import write_all

        written = write_all(load_all(args.manifests), pool, args.out or Path("docs/tables"), args.n_boot, args.seed)
    else:
        from specbench.analysis.plots import write_all

        written = write_all(pool, args.out or Path("docs/figures"), args.results, args.bench, args.n_boot, args.seed)
    print(f"wrote {len(written)} files under {(args.out or written[0].parent) if written else args.out}")
    return written


if __name__ == "__main__":
    main()
