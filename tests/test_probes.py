"""Eq. (1) probes on the tiny shipped models (CPU), the tree builders, and Eq. (1) on hand-made inputs."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pandas as pd
import pytest
import torch

from specbench.drafters.eagle_head import random_eagle_head
from specbench.model import load_model
from specbench.analysis.eq1 import (
    eq1_report, eq1_speedup, from_probes, from_steps, measured_speedup, phase_coverage, tokens_per_s,
    verify_by_nodes, verify_ratios,
)
from specbench.timing.probes import COLUMNS, Prober, ProbeSettings, run_probes, write_probes
from specbench.timing.timer import time_calls
from specbench.timing.trees import chain_draft, eagle_like_tree, level_widths


@pytest.fixture(scope="module")
def tiny():
    model = load_model("tiny-target", dtype=torch.float32)
    model.source = "tiny-target"
    draft = load_model("tiny-draft", dtype=torch.float32)
    draft.source = "tiny-draft"
    return model, draft


@pytest.fixture(scope="module")
def probes(tiny):
    model, draft = tiny
    settings = ProbeSettings(contexts=(24, 40), verify_sizes=(4, 12), masks=("tree", "sequence"), head_rows=(1, 4),
                             replays=6, warmup=1)
    return run_probes(model, settings, head=random_eagle_head(model), draft_model=draft)


def test_probe_rows_are_sane(probes):
    assert list(probes.columns[: len(COLUMNS)]) == COLUMNS
    assert set(probes.probe) == {"prefill", "T_t", "T_v", "T_d"}
    assert (probes.replays == 6).all() and (probes.median_ms > 0).all()
    assert ((probes.p10_ms <= probes.median_ms) & (probes.median_ms <= probes.p90_ms)).all()
    t_v = probes[probes.probe == "T_v"]
    # every (context, mask, n) asked for is there once, with n and mask recorded
    assert sorted(zip(t_v.context, t_v["mask"], t_v.n)) == sorted(
        (c, m, n) for c in (24, 40) for m in ("tree", "sequence") for n in (4, 12))
    t_t = probes[probes.probe == "T_t"]
    assert list(t_t.n) == [1, 1] and set(t_t["mask"]) == {"causal"} and list(t_t.context) == [24, 40]
    prefill = probes[probes.probe == "prefill"]
    assert list(prefill.n) == [24, 40] and list(prefill.context) == [24, 40]
    heads = probes[probes.component == "eagle_head"]
    assert sorted(zip(heads.context, heads.n)) == [(24, 1), (24, 4), (40, 1), (40, 4)]
    assert (heads.probe == "T_d").all() and heads.model.str.startswith("eagle_head(tiny-target").all()
    drafts = probes[probes.component == "draft_model"]
    assert list(drafts.probe) == ["T_d", "T_d"] and (drafts.model == "tiny-draft").all() and (drafts.n == 1).all()
    # identity columns; a CPU has no CUDA graphs, so no bucket and perf_counter timing
    assert set(probes[probes.component == "target"].model) == {"tiny-target"}
    assert set(probes.quant) == {"fp32"} and set(probes.backend) == {"dense"} and set(probes.gpu) == {"cpu"}
    assert (~probes.cuda_graphs).all() and probes.bucket.isna().all() and set(probes.timer) == {"perf_counter"}
    # by default each context gets a cache just large enough (+ the runner's 128 scratch slots)
    target = probes[probes.component == "target"]
    assert set(target[target.context == 24].cache_slots) == {24 + 12 + 8 + 128}
    assert set(target[target.context == 40].cache_slots) == {40 + 12 + 8 + 128}


def test_fixed_cache_size(tiny):
    model, _ = tiny
    settings = ProbeSettings(contexts=(8, 30), verify_sizes=(4,), masks=("sequence",), replays=2, warmup=0,
                             prefill=False, max_seq_len=100)
    frame = run_probes(model, settings)
    assert set(frame.cache_slots) == {100 + 128} and sorted(set(frame.context)) == [8, 30]
    with pytest.raises(ValueError):
        ProbeSettings(contexts=(95,), verify_sizes=(10,), max_seq_len=100).cache_for(95)


def test_probes_parquet_round_trip(probes, tmp_path):
    path = write_probes(probes, tmp_path)
    assert path.name == "probes.parquet"
    back = pd.read_parquet(path)
    assert len(back) == len(probes) and list(back.columns) == list(probes.columns)
    ratios = verify_ratios(back)
    assert len(ratios) == 8 and (ratios.ratio > 0).all()
    row = ratios[(ratios.context == 24) & (ratios["mask"] == "tree") & (ratios.n == 12)].iloc[0]
    t_t = back[(back.probe == "T_t") & (back.context == 24)].median_ms.iloc[0]
    assert row.ratio == pytest.approx(row.median_ms / t_t)


def test_probe_forward_is_the_sessions_verify(tiny):
    """The probed forward computes exactly what ModelSession.verify computes for the same draft and prefix."""
    model, _ = tiny
    prober = Prober(model, ProbeSettings(contexts=(16,), verify_sizes=(9,), replays=1, warmup=0))
    draft = eagle_like_tree(9, depth=3, topk=3, vocab_size=model.config.vocab_size)
    with torch.inference_mode():
        prober.set_context(16)
        inputs, bucket = prober.verify_inputs(draft)
        ours = prober.runner(*inputs)[0].clone()
        root = prober.ids[16]
        theirs = prober.session.verify(root, draft)[0]
    assert bucket is None and prober.session.length == 16
    torch.testing.assert_close(ours, theirs)
    # and it is not a no-op: another prefix gives other logits
    with torch.inference_mode():
        prober.set_context(20)
        other = prober.runner(*prober.verify_inputs(draft)[0])[0]
    assert not torch.allclose(ours, other)


@pytest.mark.parametrize("n", [1, 2, 7, 10, 30, 48, 60])
def test_eagle_like_tree_shape(n):
    draft = eagle_like_tree(n, depth=6, topk=10, vocab_size=100)
    assert len(draft) == n - 1
    depths = draft.depths
    assert max(depths, default=0) <= 6 and all(0 <= t < 100 for t in draft.tokens)
    widths = [depths.count(d) for d in range(1, max(depths, default=0) + 1)]
    assert widths == level_widths(n - 1, 6, 10) and all(w > 0 for w in widths)
    kids = draft.children
    assert all(len(k) <= 10 for k in kids)  # top-k children per node
    if n >= 7:
        assert max(depths) == 6  # deep enough to use every draft pass


def test_level_widths_refuse_impossible_trees():
    with pytest.raises(ValueError):
        level_widths(1000, 2, 3)  # at most 3 + 9 nodes fit
    assert level_widths(12, 2, 3) == [3, 9]


def test_chain_draft_mask_is_causal():
    anc = chain_draft(5, vocab_size=50).ancestors()
    assert torch.equal(anc, torch.ones(5, 5, dtype=torch.bool).tril())
    tree = eagle_like_tree(8, depth=2, topk=4).ancestors()
    assert not torch.equal(tree, torch.ones(8, 8, dtype=torch.bool).tril())


def test_time_calls_measures_what_it_runs():
    t = time_calls(lambda: time.sleep(0.002), "cpu", replays=7, warmup=1)
    assert t.replays == 7 and t.timer == "perf_counter"
    assert 2.0 <= t.p10_ms <= t.median_ms <= t.p90_ms < 200
    with pytest.raises(ValueError):
        time_calls(lambda: None, "cpu", replays=0)


def test_eq1_speedup_hand_computed():
    # tau 4, 6 draft passes of 0.5 ms, T_t 10 ms, T_v 12 ms: 4 / (6 * 0.05 + 1.2) = 4 / 1.5
    assert eq1_speedup(4.0, 6, 0.5, 10.0, 12.0) == pytest.approx(8 / 3)
    # AR: tau 1, no drafting, T_v(1) = T_t  ->  1
    assert eq1_speedup(1.0, 0, 0.0, 7.0, 7.0) == pytest.approx(1.0)
    # as a speed: 4 tokens per 3 + 12 ms step
    assert tokens_per_s(4.0, 3.0, 12.0) == pytest.approx(4000 / 15)
    # untimed phases give no prediction, never a number
    assert math.isnan(eq1_speedup(2.0, 1, 1.0, 0.0, 1.0)) and math.isnan(tokens_per_s(2.0, 0.0, 0.0))
    ratios = eq1_speedup(np.array([2.0, 4.0]), 1.0, np.array([1.0, 1.0]), np.array([5.0, 0.0]), 4.0)
    assert ratios[0] == pytest.approx(2.0) and math.isnan(ratios[1])


def _probe(probe, n, mask, context, median, component="target", model="m", quant="w4a16", backend="gemlite"):
    return {"probe": probe, "n": n, "mask": mask, "context": context, "median_ms": median, "p10_ms": median * 0.9,
            "p90_ms": median * 1.1, "component": component, "model": model, "quant": quant, "backend": backend,
            "gpu": "cpu"}


RUN = {"model.source": "m", "quant.scheme": "w4a16", "quant.backend": "gemlite", "runtime.dtype": "bfloat16",
       "env.gpu": None, "drafter": "eagle", "drafter.topk": 10, "drafter.depth": 6, "drafter.tree_size": 60}


def test_from_probes_matching_rule():
    rows = [_probe("T_t", 1, "causal", 512, 10.0), _probe("T_v", 56, "tree", 512, 14.0),
            _probe("T_v", 60, "tree", 512, 18.0), _probe("T_v", 60, "sequence", 512, 11.0),
            _probe("T_d", 10, "tree", 512, 0.5, "eagle_head", "eagle_head(m)", "bf16", "dense"),
            _probe("T_d", 1, "tree", 512, 0.3, "eagle_head", "eagle_head(m)", "bf16", "dense"),
            _probe("T_t", 1, "causal", 1024, 20.0), _probe("T_v", 60, "tree", 1024, 30.0),
            _probe("T_t", 1, "causal", 512, 5.0, quant="w4a16", backend="torch"),  # another backend: not this run's
            _probe("T_t", 1, "causal", 512, 3.0, quant="bf16", backend="dense")]  # the 16-bit target
    probes = pd.DataFrame(rows)
    terms = from_probes(RUN, probes, context=600, tau=4.5)
    # nearest context (512), n exact (60, not 56), the tree mask, T_d over topk rows, this backend only
    assert (terms.t_t_ms, terms.t_v_ms, terms.t_d_ms, terms.d, terms.n) == (10.0, 18.0, 0.5, 6, 60)
    assert terms.speedup == pytest.approx(4.5 / (6 * 0.5 / 10 + 18 / 10))
    assert terms.tokens_per_s == pytest.approx(4500 / (6 * 0.5 + 18)) and terms.source == "probes"
    assert terms.tv_range == pytest.approx((18 * 0.9 / 11, 18 * 1.1 / 9))
    assert from_probes(RUN, probes, context=900, tau=4.5).t_v_ms == 30.0  # context 1024 is nearer
    # no nearest-n fallback: a tree size without its probe says which term is missing
    assert from_probes({**RUN, "drafter.tree_size": 48}, probes, 512, 4.5) == "no probe for T_v(n=48)"
    dense = from_probes({**RUN, "quant.scheme": "none", "drafter": "ngram", "drafter.min_n": 1, "drafter.max_n": 3,
                         "drafter.num_tokens": 5, "drafter.match": "earliest", "drafter.pad": "clamp"},
                        probes, 512, 2.0)
    assert dense == "no probe for T_v(n=6)"  # the bf16 T_t matched; no sequence probe at n = 6
    skip = {**RUN, "drafter": "layer_skip", "drafter.keep_fraction": 0.5, "drafter.selection": "uniform",
            "drafter.num_tokens": 59}
    assert from_probes(skip, probes.assign(mask="sequence"), 512, 2.0) == "no probe for T_d"
    # an EAGLE-3 head is not the EAGLE-1/2 head the probes time
    assert from_probes({**RUN, "drafter": "eagle3"}, probes, 512, 4.5) == "no probe for T_d"


def _steps(accepts, drafted, draft_ms, verify_ms, accept_ms):
    n = len(accepts)
    return pd.DataFrame({"question_id": [1] * n, "repeat": [0] * n, "step": range(n), "accept_length": accepts,
                         "drafted": drafted, "draft_depth": [max(1, d // 10) if d else 0 for d in drafted],
                         "draft_ms": draft_ms, "verify_ms": verify_ms, "accept_ms": accept_ms, "sample_ms": [0.0] * n})


def test_eq1_report_on_hand_made_runs():
    ar_steps = _steps([1] * 4, [0] * 4, [0.0] * 4, [10.0] * 4, [0.5] * 4)
    sd_steps = _steps([3, 5, 4, 4], [59, 59, 59, 59], [3.0] * 4, [12.0] * 4, [1.0] * 4)
    # wall clock: AR 100 tokens in 1.05 s, SD 100 tokens in 0.4 s  ->  2.625x
    ar_res = pd.DataFrame({"question_id": [1], "repeat": [0], "new_tokens": [100], "decode_s": [1.05],
                           "total_s": [1.1], "prompt_tokens": [500], **{k: [v] for k, v in RUN.items()}})
    sd_res = ar_res.assign(decode_s=[0.4], total_s=[0.45])
    out = eq1_report((sd_res, sd_steps), (ar_res, ar_steps))
    assert out["tau"] == 4.0 and out["T_t_ms"] == 10.0 and out["nodes"] == 59 and out["depth"] == 5
    assert out["predicted_speedup"] == pytest.approx(4.0 / ((3.0 + 12.0) / 10.0))  # Eq. (1): 2.667
    assert out["predicted_tok_s"] == pytest.approx(4000 / 15)
    assert out["predicted_speedup_steps"] == pytest.approx(4.0 * 10.5 / 16.0)  # whole steps: 2.625
    assert out["measured_speedup"] == pytest.approx((100 / 0.4) / (100 / 1.05))
    assert out["prediction_error"] == pytest.approx((8 / 3) / 2.625 - 1)
    assert out["T_d_ms"] == pytest.approx(0.6) and out["verify_ratio"] == pytest.approx(1.2)
    probes = pd.DataFrame([_probe("T_t", 1, "causal", 512, 9.0), _probe("T_v", 60, "tree", 512, 11.0),
                           _probe("T_d", 10, "tree", 512, 0.4, "eagle_head", "eagle_head(m)", "bf16", "dense")])
    with_probes = eq1_report((sd_res, sd_steps), (ar_res, ar_steps), probes=probes)
    assert with_probes["probe_speedup"] == pytest.approx(4.0 / (6 * 0.4 / 9 + 11 / 9))
    assert with_probes["probe_tok_s"] == pytest.approx(4000 / (6 * 0.4 + 11))
    missing = eq1_report((sd_res, sd_steps), (ar_res, ar_steps), probes=probes[probes.probe != "T_d"])
    assert missing["probe_error"] == "no probe for T_d" and "probe_speedup" not in missing


def test_from_steps_and_verify_by_nodes():
    steps = _steps([1, 2, 1, 3], [0, 5, 5, 9], [0.0, 1.0, 1.0, 2.0], [4.0, 6.0, 8.0, 9.0], [0.1] * 4)
    terms = from_steps(steps, t_t_ms=4.0)
    assert terms.tau == 1.75 and terms.n == pytest.approx(19 / 4 + 1) and terms.source == "steps"
    assert terms.draft_ms == 1.0 and terms.t_v_ms == 6.75 and terms.d == 0.75  # depths 0, 1, 1, 1
    assert terms.t_d_ms == pytest.approx(4 / 3) and terms.over_t_t(terms.t_v_ms) == pytest.approx(6.75 / 4)
    assert terms.tokens_per_s == pytest.approx(1750 / 7.75)
    by_n = verify_by_nodes(steps).set_index("n")
    assert list(by_n.index) == [1, 6, 10] and by_n.loc[6, "median_ms"] == 7.0 and by_n.loc[6, "steps"] == 2
    results = pd.DataFrame({"decode_s": [0.0079]})
    assert phase_coverage(results, steps) == pytest.approx((4.0 + 27.0 + 0.4) / 7.9)


def test_measured_speedup_is_macro_over_questions():
    ar = pd.DataFrame({"question_id": [1, 1, 2], "repeat": [0, 0, 0], "new_tokens": [10, 10, 30],
                       "decode_s": [1.0, 1.0, 1.0], "total_s": [1.0, 1.0, 1.0]})
    sd = ar.assign(decode_s=[0.5, 0.5, 0.25])
    out = measured_speedup(sd, ar)
    # per question: AR 10 and 30 tok/s (mean 20); SD 20 and 120 (mean 70)
    assert out["measured_speedup"] == pytest.approx(70 / 20)
    assert out["measured_speedup_micro"] == pytest.approx((50 / 1.25) / (50 / 3.0))


@pytest.mark.slow
def test_bench_eq1_smoke(tmp_path):
    from benchmarks.bench_eq1 import main

    result = main(["--smoke", "--out", str(tmp_path)])  # it pins torch to 1 thread, as conftest already has
    frame = pd.read_parquet(tmp_path / "probes.parquet")
    assert set(frame.scheme) == {"bf16", "w8a8_int8", "w4a16"} and not result["skipped"]
    tree = frame[(frame.probe == "T_v") & (frame["mask"] == "tree")]
    assert sorted(set(tree.n)) == [4, 10] and (tree.median_ms > 0).all()
    assert set(frame[frame.component == "eagle_head"].n) == {1, 10}
    mem = json.loads((tmp_path / "eq1.json").read_text())["memory"]
    assert mem["scaled"] and mem["layers_built"] == 3 and mem["new_tokens"] == 8
    assert mem["target_bytes_scaled"] > mem["target_bytes"] and mem["peak_run_bytes"] is None  # no CUDA on a CPU
    assert "T_v(n)/T_t" in (tmp_path / "eq1.md").read_text()


@pytest.mark.slow
def test_bench_decode_smoke(tmp_path):
    from benchmarks.bench_decode import main

    result = main(["--smoke", "--out", str(tmp_path)])  # it pins torch to 1 thread, as conftest already has
    saved = json.loads((tmp_path / "bench_decode.json").read_text())
    decode = saved["decode"]
    for name in ("specbench (CUDA graphs)", "specbench (no graphs)", "transformers generate (eager, dynamic cache)"):
        assert decode[name]["tok_s"] > 0, name
    assert saved["roofline"]["tok_s"] > 0 and saved["bandwidth"]["bandwidth_Bps"] > 0
    assert result["model"] == "tiny-target" and "% of roofline" in (tmp_path / "bench_decode.md").read_text()


@pytest.mark.slow
def test_bench_sd_loop_smoke(tmp_path):
    from benchmarks.bench_sd_loop import main

    result = main(["--smoke", "--trace", "--out", str(tmp_path)])
    rows = {r["method"]: r for r in json.loads((tmp_path / "bench_sd_loop.json").read_text())["methods"]}
    for name, row in rows.items():  # the traced generation is kept; a CPU has no device activity, so no gaps
        assert (tmp_path / row["gaps"]["trace"]).stat().st_size > 0 and row["gaps"]["trace"] == f"trace_{name}.json.gz"
        assert row["gaps"]["idle_ms_per_step"] == 0 and row["gaps"]["sites"] == []
        assert row["gaps"]["device_time"] == {"graph_busy": 0, "eager_busy": 0, "idle": 0, "eager": {},
                                              "idle_before": {}, "graphs": {}}
    assert set(rows) == {"ar", "ngram", "eagle", "hierspec", "sp"} and not any("error" in r for r in rows.values())
    assert rows["ar"]["tau"] == 1.0 and all(rows[m]["tau"] > 1.5 for m in ("eagle", "hierspec", "sp"))
    for row in rows.values():
        assert row["steps"] > 0 and row["tok_s"] > 0 and row["eq1_tok_s"] is None  # a CPU replays no graph
        walls = row["wall_ms_per_step_runs"]  # three timed generations, the median's wall in the row
        assert len(walls) == 3 and row["wall_ms_per_step"] == sorted(walls)[1]
    assert result["model"] == "tiny-target" and "| hierspec |" in (tmp_path / "bench_sd_loop.md").read_text()
    assert result["copy_bandwidth_Bps"] > 0  # measured before the models, for each graph's bound on a GPU


def test_bench_sd_loop_sets_each_graph_against_its_bandwidth_bound():
    from benchmarks.bench_sd_loop import graph_rows, markdown
    from specbench.timing.step_replays import GraphTerm

    terms = [GraphTerm("llama-3-8b-instruct[30]", 2.0, 3.0, 4_650_000_000),
             GraphTerm("device acceptance (29 nodes)", 2.0, 0.04)]  # no weights counted: no bound
    rows = graph_rows(terms, 3.1e12)
    assert rows[0]["bound_ms"] == pytest.approx(1.5) and rows[0]["of_bound"] == pytest.approx(0.5)
    assert rows[0]["ms_per_step"] == pytest.approx(6.0) and rows[1]["bound_ms"] is rows[1]["of_bound"] is None
    assert graph_rows(terms, None)[0]["of_bound"] is None  # no bandwidth measured
    row = {"method": "hierspec", "tau": 4.11, "tok_s": 150.0, "eq1_tok_s": 152.0, "eq1_over_measured": 1.01,
           "wall_ms_per_step": 27.0, "eq1_step_ms": 26.5, "host_overhead_at_most": 0.02, "reverified_steps": 0,
           "steps": 62, "graphs": rows, "host_profile": []}
    result = {"model": "m", "quant": "w4a16", "device": "d", "compile": True, "compile_scope": "layer",
              "prompt_tokens": 128, "new_tokens": 256, "device_loop": True, "copy_bandwidth_Bps": 3.1e12,
              "methods": [row]}
    text = markdown(result)
    assert "| 27.00 | 26.50 | 2.0% | – | 0 of 62 |" in text  # no CUPTI run: its column says so, not "nan%"
    assert "Profiled wall – ms/step" in text
    assert "llama-3-8b-instruct[30] 3.000 x 2.00 [50%], device acceptance (29 nodes) 0.040 x 2.00." in text
    assert "this run's copy bandwidth, 3.10 TB/s" in text


def test_busy_ms_is_the_union_of_device_activity():
    from types import SimpleNamespace

    from torch.autograd import DeviceType

    from benchmarks.bench_sd_loop import busy_ms

    def event(name, device, start, end):
        return SimpleNamespace(name=name, device_type=device, time_range=SimpleNamespace(start=start, end=end))

    cuda, cpu = DeviceType.CUDA, DeviceType.CPU
    events = [event("k1", cuda, 0, 10), event("k2", cuda, 5, 15), event("k3", cuda, 30, 40),  # overlap counted once
              event("phase:draft", cuda, 0, 40),  # the GPU-side copy of an annotation is not busy time
              event("aten::mm", cpu, 0, 45)]
    assert busy_ms(SimpleNamespace(events=lambda: events)) == pytest.approx(25e-3)  # µs -> ms
