"""The shipped tiny family makes acceptance lengths mean something: trained drafters beat random ones, and a
W8A8 target keeps its acceptance against the 16-bit drafters."""

from __future__ import annotations

import pytest

from specbench.datasets import build_prompt, load_questions
from specbench.config import EngineConf, ModelConf, QuantConf
from specbench.decoding.generate import generate
from specbench.engine import Engine

pytestmark = pytest.mark.slow  # minutes on two CPU cores; CI runs it

MAX_NEW = 32
N_PROMPTS = 4


@pytest.fixture(scope="module")
def prompts():
    from transformers import AutoTokenizer

    from specbench.model.registry import shipped_path

    tokenizer = AutoTokenizer.from_pretrained(str(shipped_path("tiny-target")))
    questions = load_questions("specbench_mini", question_end=N_PROMPTS)
    return [build_prompt(tokenizer, q, 0, []).input_ids for q in questions], tokenizer.eos_token_id


ENGINE = Engine(EngineConf(cuda_graphs=False, gemv=False), max_seq_len=1024)
RANDOM = Engine(ENGINE.execution, max_seq_len=1024, seed=1)  # shape-only models and random heads of seed 1


def mean_tau(target, drafter, prompts):
    ids, eos = prompts
    drafter = ENGINE.drafter(drafter, target) if isinstance(drafter, dict) else drafter(target)
    steps = committed = 0
    for prompt in ids:
        g = generate(target, drafter, prompt, max_new_tokens=MAX_NEW, stop_ids=frozenset({eos}))
        steps += g.steps
        committed += sum(g.accept_lengths)
    return committed / steps


@pytest.fixture(scope="module")
def target():
    return ENGINE.session(ENGINE.model(ModelConf("tiny-target")))


DRAFT_MODEL = {"name": "draft_model", "num_tokens": 5, "model": {"source": "tiny-draft"}}
EAGLE = {"name": "eagle", "head": "tiny-eagle", "topk": 4, "depth": 4, "tree_size": 16}


def test_trained_draft_model_beats_a_random_one(target, prompts):
    tau_trained = mean_tau(target, DRAFT_MODEL, prompts)
    random = {**DRAFT_MODEL, "model": {"source": "tiny-draft", "shape_only": True}}
    tau_random = mean_tau(target, lambda t: RANDOM.drafter(random, t), prompts)
    assert tau_trained > 1.3, tau_trained
    assert tau_trained > tau_random + 0.25, (tau_trained, tau_random)


def test_trained_eagle_head_beats_a_random_one(target, prompts):
    tau_trained = mean_tau(target, EAGLE, prompts)
    tau_random = mean_tau(target, lambda t: RANDOM.drafter({**EAGLE, "head": "random"}, t), prompts)
    assert tau_trained > 1.3, tau_trained
    assert tau_trained > tau_random + 0.5, (tau_trained, tau_random)


def test_w8a8_target_keeps_its_acceptance(target, prompts):
    """A W8A8 (int8, RTN) target verified against the 16-bit drafters: tau within 15 % of the 16-bit target's."""
    w8a8 = ENGINE.session(ENGINE.model(ModelConf("tiny-target"), QuantConf("w8a8_int8")))
    for make in (DRAFT_MODEL, EAGLE):
        tau16, tau8 = mean_tau(target, make, prompts), mean_tau(w8a8, make, prompts)
        assert abs(tau8 - tau16) <= 0.15 * tau16, (tau16, tau8)


def test_eagle_head_prefill_is_timed_as_drafter_prefill(target):
    """The head consumes the prompt's pairs in observe (the drafter-prefill phase), not in the first draft."""
    from specbench.decoding.phases import PhaseTimer

    session = target
    drafter = ENGINE.drafter({"name": "eagle", "head": "random", "topk": 4, "depth": 3, "tree_size": 12}, session)
    prompt = list(range(10, 40))
    gen = generate(session, drafter, prompt, max_new_tokens=8, timer=PhaseTimer("cpu", enabled=True))
    assert gen.phase_ms[-1]["drafter_prefill"] > 0 and gen.tokens  # step -1: the prefills
    session.reset()
    drafter.reset()
    _, hidden = session.extend(prompt)
    drafter.observe(prompt + [1], hidden, 0)
    assert drafter.pairs == len(prompt) and drafter.pending is None and drafter._root is not None
