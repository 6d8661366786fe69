"""CUDA-graph buckets: no coarser than 8 tokens, a drafter's verify size exact, graphs captured only when used."""

from __future__ import annotations

import pytest
import torch

from specbench.config import EngineConf, ModelConf
from specbench.decoding.forward import DEFAULT_BUCKETS, ForwardRunner
from specbench.engine import Engine
from specbench.model import load_model
from specbench.timing.probes import HeadProber, Prober, ProbeSettings

ENGINE = Engine(EngineConf(cuda_graphs=False, gemv=False), max_seq_len=256)


def test_default_buckets_pad_by_at_most_seven_rows():
    assert DEFAULT_BUCKETS == (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128)
    runner = ForwardRunner(load_model("tiny-target", shape_only=True), 64)
    assert [runner.bucket(n) for n in (3, 10, 24, 50, 60, 121)] == [4, 16, 24, 56, 64, 128]
    assert all(runner.bucket(n) - n <= 7 for n in range(1, 129)) and runner.bucket(129) is None


def test_add_bucket_runs_exactly_that_size():
    runner = ForwardRunner(load_model("tiny-target", shape_only=True), 64)
    runner.add_bucket(60)
    runner.add_bucket(60)  # idempotent
    assert runner.bucket(60) == 60 and runner.bucket(61) == 64 and runner.buckets.count(60) == 1
    assert runner.scratch == 128  # scratch slots (the largest bucket) are unchanged
    with pytest.raises(ValueError, match="outside"):
        runner.add_bucket(129)


@pytest.mark.parametrize("conf, n", [
    ({"name": "eagle", "head": "tiny-eagle", "topk": 3, "depth": 3, "tree_size": 13}, 13),
    ({"name": "draft_model", "num_tokens": 5}, 6),
    ({"name": "ngram", "num_tokens": 4}, 5),
    ({"name": "layer_skip", "num_tokens": 2}, 3),
])
def test_the_drafters_verify_size_gets_its_own_bucket(conf, n):
    session = ENGINE.session(ENGINE.model(ModelConf("tiny-target")))
    assert session.runner.bucket(n) != n
    ENGINE.drafter(conf, session)
    assert session.runner.bucket(n) == n


def test_hierspec_intermediate_verifies_its_inner_tree_exactly():
    session = ENGINE.session(ENGINE.model(ModelConf("tiny-target")))
    drafter = ENGINE.drafter({"name": "hierspec", "head": "tiny-eagle", "min_draft": 3, "inner_depth": 2,
                              "inner_tree_size": 11, "topk": 3, "model": {"source": "tiny-target"}}, session)
    assert drafter.session.runner.bucket(11) == 11 and session.runner.bucket(11) == 16


def test_probes_run_at_the_requested_n():
    model = load_model("tiny-target", dtype=torch.float32)
    settings = ProbeSettings(contexts=(16,), verify_sizes=(13,), head_rows=(5,), replays=1, warmup=0)
    prober = Prober(model, settings)
    prober.verify(13, 16)
    assert prober.runner.bucket(13) == 13
    head = HeadProber(ENGINE.head("random", model), settings)
    head.draft_pass(5, 16)
    assert head.runner.bucket(5) == 5


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_graphs_are_captured_lazily_per_used_bucket():
    from specbench.decoding.draft import Draft

    engine = Engine(EngineConf(cuda_graphs=True, gemv=False), device="cuda",
                    max_seq_len=256)
    session = engine.session(engine.model(ModelConf("tiny-target")))
    session.extend(list(range(20)))  # a 20-token prefill: bucket 24
    for n in (50, 60):
        session.verify(1, Draft.chain(list(range(n - 1))))
    session.runner.add_bucket(60)
    session.verify(1, Draft.chain(list(range(59))))
    assert sorted(key[0] for key in session.runner._graphs) == [24, 56, 60, 64]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_probe_rows_record_the_exact_bucket_on_a_gpu():
    model = load_model("tiny-target", device="cuda", dtype=torch.bfloat16)
    settings = ProbeSettings(contexts=(64,), verify_sizes=(50,), replays=3, warmup=1)
    row = Prober(model, settings).verify(50, 64)
    assert row["bucket"] == 50 and row["cuda_graphs"] and row["timer"] == "cuda_events"
