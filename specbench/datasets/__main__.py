"""``python -m specbench.datasets download NAME [NAME ...] [--cache-dir DIR] [--force]`` and ``... list``."""

from __future__ import annotations

import argparse
import sys

from specbench.datasets.download import ChecksumError, DatasetUnavailableError, default_cache_dir
from specbench.datasets.registry import UnknownDatasetError, dataset_file, get_dataset, list_datasets, load_questions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specbench.datasets", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    down = commands.add_parser("download", help="download datasets into the cache and verify them")
    down.add_argument("names", nargs="+", metavar="NAME", help=f"one of: {', '.join(list_datasets())}, or all")
    down.add_argument("--cache-dir", default=None, help=f"cache folder (default {default_cache_dir()})")
    down.add_argument("--force", action="store_true", help="download again even when cached")
    commands.add_parser("list", help="list the known datasets")
    args = parser.parse_args(argv)

    if args.command == "list":
        for name in list_datasets():
            spec = get_dataset(name)
            print(f"{name:16} {spec.prompt_style:12} max_new_tokens={spec.max_new_tokens:<5} {spec.description}")
        return 0
    names = list_datasets() if args.names == ["all"] else args.names
    failed = 0
    for name in names:
        try:
            path = dataset_file(name, cache_dir=args.cache_dir, force=args.force)
            count = len(load_questions(name, path=path))
        except (UnknownDatasetError, DatasetUnavailableError, ChecksumError) as err:
            print(f"{name}: {err}", file=sys.stderr)
            failed += 1
            continue
        print(f"{name}: {count} questions at {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
