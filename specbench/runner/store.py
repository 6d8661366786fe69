"""Result files of one run folder: ``results.parquet`` (a row per question, turn and repeat) and
``steps.parquet`` (a row per decoding step).

While a run measures, each question's rows go to a new part file (``results.parts/``, ``steps.parts/``), so a
question costs the same however long the run is and an interrupted run loses no finished question. ``compact``
folds the parts into the two files (the run's end, or the next open of the folder after an interruption). Every
file is written to a temporary file, flushed to disk and renamed; temporaries a killed writer left are removed
when the folder is opened.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd

from specbench.atomic import remove_temporaries, write_parquet_atomic

KEY = ("question_id", "repeat")
TABLES = ("results", "steps")


def _keys(frame: pd.DataFrame) -> pd.Series:
    return pd.Series(list(zip(frame.question_id.astype(str), frame["repeat"].astype(str))), index=frame.index)


class ResultStore:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        remove_temporaries(self.folder)
        self.compact()  # parts an interrupted run left
        results = self.path("results")
        self._done = set()
        if results.exists():
            self._done = set(_keys(pd.read_parquet(results, columns=list(KEY))))

    def path(self, table: str) -> Path:
        return self.folder / f"{table}.parquet"

    def parts(self, table: str) -> list[Path]:
        return sorted((self.folder / f"{table}.parts").glob("*.parquet"))

    @property
    def results(self) -> pd.DataFrame:
        """Every recorded result row (compacted file and parts)."""
        return self._read("results")

    @property
    def steps(self) -> pd.DataFrame:
        return self._read("steps")

    def is_done(self, question_id, repeat: int) -> bool:
        """Whether all turns of this question and repeat are already recorded."""
        return (str(question_id), str(repeat)) in self._done

    def forget_other_versions(self, source: str) -> int:
        """Count as not done every (question, repeat) whose rows another code version measured (``env.source_hash``
        other than ``source``, or not recorded): an unfinished folder is completed by one version of the code, the
        new rows replacing those. Returns how many were forgotten."""
        rows = self.results
        if rows.empty:
            return 0
        other = rows["env.source_hash"] != source if "env.source_hash" in rows else pd.Series(True, index=rows.index)
        stale = set(_keys(rows[other]))
        self._done -= stale
        return len(stale)

    def add(self, rows: list[dict], step_rows: list[dict]) -> None:
        """Record one question's rows (all its turns) and step rows as a new part of each table.

        Rows of a (question, repeat) measured again (``output.resume=false``) replace the old ones when the parts
        are read or compacted: a question and repeat appears once per run folder.
        """
        name = f"{time.time_ns():020d}-{os.getpid()}.parquet"  # parts sort in the order they were written
        for table, frame in (("steps", step_rows), ("results", rows)):  # results last: it marks the question done
            if frame:
                write_parquet_atomic(pd.DataFrame(frame), self.folder / f"{table}.parts" / name)
        self._done.update((str(r["question_id"]), str(r["repeat"])) for r in rows)

    def _read(self, table: str) -> pd.DataFrame:
        """The compacted file plus the parts in order, a later part's (question, repeat) replacing earlier rows."""
        frames = [pd.read_parquet(p) for p in [self.path(table)] + self.parts(table) if p.exists()]
        frames = [f for f in frames if not f.empty]
        if not frames:
            return pd.DataFrame()
        newest: dict[tuple, int] = {}
        for i, frame in enumerate(frames):
            newest.update(dict.fromkeys(set(_keys(frame)), i))
        kept = [f[_keys(f).map(newest) == i] for i, f in enumerate(frames)]
        return pd.concat(kept, ignore_index=True)

    def compact(self) -> None:
        """Fold the parts into ``results.parquet`` and ``steps.parquet`` and remove them."""
        for table in TABLES:
            parts = self.parts(table)
            if not parts:
                continue
            write_parquet_atomic(self._read(table), self.path(table))
            for part in parts:
                part.unlink()
            parts[0].parent.rmdir()
