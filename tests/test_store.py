"""Result storage: a question appends a part without rewriting earlier data; the run's end (or the next open after
an interruption) compacts; temporaries of a killed writer are removed; every write is atomic."""

from __future__ import annotations

import pandas as pd

from specbench.atomic import write_text_atomic
from specbench.runner.store import ResultStore


def question(i: int, repeat: int = 0, tok_s: float = 1.0):
    return ([{"question_id": i, "repeat": repeat, "turn": 0, "tok_s": tok_s}],
            [{"question_id": i, "repeat": repeat, "step": s} for s in range(2)])


def test_questions_append_parts_and_leave_earlier_files_alone(tmp_path):
    store = ResultStore(tmp_path)
    store.add(*question(0))
    store.compact()
    compacted = (tmp_path / "results.parquet").stat()
    for i in range(1, 4):
        store.add(*question(i))
    assert (tmp_path / "results.parquet").stat().st_mtime_ns == compacted.st_mtime_ns  # not rewritten per question
    assert len(store.parts("results")) == 3 and len(store.parts("steps")) == 3
    assert sorted(store.results.question_id) == [0, 1, 2, 3] and len(store.steps) == 8
    store.compact()
    assert not (tmp_path / "results.parts").exists() and not (tmp_path / "steps.parts").exists()
    assert sorted(pd.read_parquet(tmp_path / "results.parquet").question_id) == [0, 1, 2, 3]
    assert len(pd.read_parquet(tmp_path / "steps.parquet")) == 8


def test_an_interrupted_run_is_compacted_when_reopened_and_resumes(tmp_path):
    store = ResultStore(tmp_path)
    store.add(*question(0))
    store.add(*question(1))  # killed here: no compact
    reopened = ResultStore(tmp_path)
    assert not reopened.parts("results") and reopened.is_done(0, 0) and reopened.is_done(1, 0)
    assert not reopened.is_done(2, 0) and not reopened.is_done(0, 1)


def test_a_later_measurement_of_a_question_replaces_the_earlier_one(tmp_path):
    store = ResultStore(tmp_path)
    store.add(*question(0, tok_s=1.0))
    store.compact()
    store.add(*question(0, tok_s=5.0))  # output.resume=false measures it again
    store.add(*question(1, tok_s=2.0))
    assert sorted(store.results.tok_s) == [2.0, 5.0] and len(store.steps) == 4
    store.compact()
    assert sorted(ResultStore(tmp_path).results.tok_s) == [2.0, 5.0]


def test_temporaries_of_a_killed_writer_are_removed_on_open(tmp_path):
    (tmp_path / "results.parts").mkdir()
    stale = [tmp_path / ".results.parquet.abc.tmp", tmp_path / "results.parts" / ".x.parquet.def.tmp"]
    for path in stale:
        path.write_bytes(b"half a file")
    write_text_atomic(tmp_path / "env.json", "{}")
    ResultStore(tmp_path)
    assert not any(path.exists() for path in stale)
    assert (tmp_path / "env.json").read_text() == "{}" and not list(tmp_path.rglob("*.tmp"))


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "config.yaml"
    write_text_atomic(target, "old: 1\n")

    def fail(tmp):
        open(tmp, "w").write("half")
        raise OSError("No space left on device")

    from specbench.atomic import write_atomic

    try:
        write_atomic(target, fail)
    except OSError:
        pass
    assert target.read_text() == "old: 1\n" and not list(tmp_path.glob("*.tmp"))


def test_rows_of_other_code_are_forgotten_so_an_unfinished_run_is_completed_by_one_version(tmp_path):
    store = ResultStore(tmp_path)
    for i, source in enumerate(["old", "new", None]):  # None: a row from before the hash was recorded
        rows, steps = question(i)
        store.add([row | {"env.source_hash": source} for row in rows], steps)
    assert ResultStore(tmp_path).forget_other_versions("new") == 2
    reopened = ResultStore(tmp_path)
    reopened.forget_other_versions("new")
    assert reopened.is_done(1, 0) and not reopened.is_done(0, 0) and not reopened.is_done(2, 0)


def test_parquet_files_are_compact_and_read_back_exactly(tmp_path):
    import pyarrow.parquet as pq

    from specbench.atomic import write_parquet_atomic

    frame = pd.DataFrame({"question_id": [1, 2], "tok_s": [1.5, float("nan")], "model.source": ["a", None],
                          "quant.group_size": [128, -1], "timing.replay_tau": [None, None],
                          "flag": [True, False], **{f"col{i}": [float(i), 0.0] for i in range(100)}})
    path = tmp_path / "results.parquet"
    write_parquet_atomic(frame, path)
    pd.testing.assert_frame_equal(pd.read_parquet(path), frame, check_exact=True)
    meta = pq.ParquetFile(path).metadata
    assert not meta.row_group(0).column(1).is_stats_set  # no column statistics
    assert b"ARROW:schema" not in (meta.metadata or {})  # no stored Arrow schema
    plain = tmp_path / "plain.parquet"
    frame.to_parquet(plain, index=False)
    assert path.stat().st_size < 0.5 * plain.stat().st_size
