"""Crash-safe file writes: a temporary file in the same folder, flushed to disk, then renamed over the target."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

import pandas as pd


def write_atomic(path: Path, write: Callable[[str], None]) -> None:
    """Call ``write(tmp)`` on a temporary file next to ``path``, fsync it, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as written:
            os.fsync(written.fileno())
        os.replace(tmp, path)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)  # the rename itself survives a crash
        finally:
            os.close(folder)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_text_atomic(path: Path, text: str) -> None:
    write_atomic(path, lambda tmp: Path(tmp).write_text(text))


def write_parquet_atomic(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as a compact parquet file: no column statistics and no stored Arrow schema, which pandas reads back
    from the parquet types alone (no index is written). A run's files hold a few rows and over a hundred columns,
    so those two made about 70 % of each file."""
    write_atomic(path, lambda tmp: frame.to_parquet(tmp, index=False, write_statistics=False, store_schema=False))


def remove_temporaries(folder: Path) -> None:
    """Delete the ``*.tmp`` files of writers killed before their rename (never a finished file)."""
    for tmp in folder.rglob("*.tmp"):
        tmp.unlink(missing_ok=True)
