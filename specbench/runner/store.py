"""Result files of one run folder: ``results.parquet`` (a row per question, turn and repeat) and
``steps.parquet`` (a row per decoding step), rewritten atomically after every question so an interrupted
run loses no finished question and a restart skips what is already there."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd

KEY = ("question_id", "repeat")


def write_atomic(frame: pd.DataFrame, path: Path) -> None:
    """Write parquet to a temporary file in the same folder, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


class ResultStore:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.results_path = self.folder / "results.parquet"
        self.steps_path = self.folder / "steps.parquet"
        self.results = pd.read_parquet(self.results_path) if self.results_path.exists() else pd.DataFrame()
        self.steps = pd.read_parquet(self.steps_path) if self.steps_path.exists() else pd.DataFrame()
        self._done = set()
        if not self.results.empty:
            self._done = set(map(tuple, self.results[list(KEY)].astype(str).values.tolist()))

    @staticmethod
    def _without(frame: pd.DataFrame, keys: set[tuple[str, str]]) -> pd.DataFrame:
        if frame.empty:
            return frame
        own = pd.Series(list(zip(frame.question_id.astype(str), frame["repeat"].astype(str))), index=frame.index)
        return frame[~own.isin(keys)]

    def is_done(self, question_id, repeat: int) -> bool:
        """Whether all turns of this question and repeat are already recorded."""
        return (str(question_id), str(repeat)) in self._done

    def add(self, rows: list[dict], step_rows: list[dict]) -> None:
        """Record one question's rows (all its turns) and step rows, and rewrite both files.

        Rows of a (question, repeat) measured again (``output.resume=false``) replace the old ones: a question and
        repeat appears once per run folder.
        """
        keys = {(str(r["question_id"]), str(r["repeat"])) for r in rows}
        self.results = pd.concat([self._without(self.results, keys), pd.DataFrame(rows)], ignore_index=True)
        if step_rows or not self.steps.empty:
            self.steps = pd.concat([self._without(self.steps, keys), pd.DataFrame(step_rows)], ignore_index=True)
            write_atomic(self.steps, self.steps_path)
        write_atomic(self.results, self.results_path)
        for row in rows:
            self._done.add((str(row["question_id"]), str(row["repeat"])))
