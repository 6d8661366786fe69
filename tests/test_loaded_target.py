"""Jobs of one process share their target (``runner.loaded``): built once per target, rebuilt for another one,
freed when a job fails, and a reused target decodes exactly as a freshly built one."""

import pandas as pd
import pytest
import torch

from specbench.decoding.generate import generate
from specbench.runner import run as runner
from specbench.runner.loaded import LOADED

BASE = ("dataset=synthetic", "dataset.synthetic_questions=2", "dataset.synthetic_prompt_tokens=8",
        "dataset.max_new_tokens=8", "timing.warmup=2", "timing.warmup_new_tokens=3", "output.progress=false",
        "compare=[]")


@pytest.fixture
def recorded_lengths(monkeypatch):
    lengths = []

    def recording(*args, max_new_tokens, **kwargs):
        lengths.append(max_new_tokens)
        return generate(*args, max_new_tokens=max_new_tokens, **kwargs)

    monkeypatch.setattr(runner, "generate", recording)
    return lengths


def test_jobs_on_one_target_build_it_once_and_another_target_is_built_afresh(hydra_compose, tmp_path,
                                                                              recorded_lengths):
    LOADED.release()
    runner.run(hydra_compose(*BASE, f"output.root={tmp_path}", "drafter=ngram"))
    builds, target = LOADED.builds, LOADED.parts[1]
    # another drafter and other sampling settings: the same target, not rebuilt
    runner.run(hydra_compose(*BASE, f"output.root={tmp_path}", "drafter=eagle", "runtime.temperature=0.7"))
    assert LOADED.builds == builds and LOADED.parts[1] is target
    # the rows record the start-up cost: the first job built the target, the second reused it
    rows = pd.concat(pd.read_parquet(f) for f in tmp_path.rglob("results.parquet"))
    built = rows[rows["drafter"].eq("ngram") | rows["runtime.temperature"].eq(0.0)]
    reused = rows[rows["runtime.temperature"].eq(0.7)]
    assert len(built) == len(reused) == 4 and (rows["warmup_s"] > 0).all()
    assert reused["target_build_s"].max() < built["target_build_s"].min()
    # each of the four methods (AR and n-gram greedy, AR and EAGLE at T = 0.7): warm-ups at timing.warmup_new_tokens,
    # an untimed prefill of each question (one new token), then the two questions at max_new_tokens
    assert recorded_lengths == [3, 3, 1, 1, 8, 8] * 4
    # the reused session decodes as a fresh build of the same config
    engine, _, session = LOADED.parts
    fresh_engine = type(engine).from_config(hydra_compose(*BASE, f"output.root={tmp_path}"))
    fresh = fresh_engine.session(fresh_engine.model(hydra_compose(*BASE).model))
    prompt = torch.randint(0, target.config.vocab_size, (12,), generator=torch.Generator().manual_seed(3)).tolist()
    kept_tokens, fresh_tokens = ([*generate(s, engine.drafter({"name": "none"}, s), prompt, max_new_tokens=16).tokens]
                                 for s in (session, fresh))
    assert kept_tokens == fresh_tokens
    # another quantization is another target
    runner.run(hydra_compose(*BASE, f"output.root={tmp_path}", "drafter=none", "quant=w8a8_int8",
                             "quant.backend=reference"))
    assert LOADED.builds == builds + 1 and LOADED.parts[1] is not target


def test_a_failed_job_frees_the_kept_target(hydra_compose, tmp_path, monkeypatch):
    cfg = hydra_compose(*BASE, f"output.root={tmp_path}", "drafter=ngram")

    def broken(*args, **kwargs):
        raise RuntimeError("a drafter failed half-way")

    monkeypatch.setattr(runner, "measure", broken)
    with pytest.raises(RuntimeError, match="half-way"):
        runner.run(cfg)
    assert LOADED.parts is None and LOADED.key is None


def test_keep_only_frees_another_target_and_keeps_this_one(hydra_compose, tmp_path):
    runner.run(hydra_compose(*BASE, f"output.root={tmp_path}", "drafter=ngram"))
    assert LOADED.keep_only(hydra_compose(*BASE, "drafter=eagle", "runtime.temperature=0.7"))
    assert LOADED.parts is not None
    assert not LOADED.keep_only(hydra_compose(*BASE, "quant=w8a8_int8", "quant.backend=reference"))
    assert LOADED.parts is None and LOADED.key is None


def test_a_leased_gpu_job_finds_the_target_kept_by_the_previous_job(hydra_compose, tmp_path, monkeypatch):
    """With runtime.device=cuda:auto the kept target is keyed by the leased device, so the next job's check waits
    for the lease: it then counts the kept target as in place and does not rebuild it."""
    from specbench import __main__ as cli
    from specbench.runner import gpu_pool, preflight

    monkeypatch.setattr(preflight, "gpu_present", lambda: True)
    monkeypatch.setattr(gpu_pool, "resolve_device", lambda runtime: "cpu")  # the lease, answered by this CPU
    seen = []
    monkeypatch.setattr(preflight, "check_memory", lambda cfg, target_loaded=False: seen.append(target_loaded))
    LOADED.release()
    for drafter in ("ngram", "eagle"):
        cli.measure(hydra_compose(*BASE, f"output.root={tmp_path}", f"drafter={drafter}", "runtime.device=cuda:auto"),
                    experiment="")
    assert seen == [False, True] and LOADED.builds >= 1
    builds = LOADED.builds
    cli.measure(hydra_compose(*BASE, f"output.root={tmp_path}", "drafter=ngram", "runtime.device=cuda:auto"),
                experiment="")
    assert LOADED.builds == builds and seen[-1] is True
