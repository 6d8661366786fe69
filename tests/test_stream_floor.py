"""``benchmarks.bench_stream_floor``' read kernel folds exactly the words each program owns."""

from tests.conftest import run_in_interpreter


def test_stream_matches_the_reference_in_the_interpreter():
    assert run_in_interpreter("from benchmarks.bench_stream_floor import smoke; smoke()") == \
        "stream matches the reference (interpreter)"
