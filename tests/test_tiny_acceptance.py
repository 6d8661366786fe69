"""The shipped tiny family makes acceptance lengths mean something: trained drafters beat random ones, and a
W8A8 target keeps its acceptance against the 16-bit drafters."""

from __future__ import annotations

import pytest
import torch

from specbench.datasets import build_prompt, load_questions
from specbench.decoding.forward import ForwardRunner
from specbench.decoding.generate import generate
from specbench.decoding.sampling import SamplingParams
from specbench.decoding.session import ModelSession
from specbench.drafters import DraftContext, build_drafter
from specbench.drafters.eagle_head import load_eagle_head, random_eagle_head
from specbench.model import build_model, load_model
from specbench.model.config import ModelConfig
from specbench.model.loading import load_hf_config
from specbench.quantization import build_quantizer

MAX_NEW = 32
N_PROMPTS = 4


@pytest.fixture(scope="module")
def prompts():
    from transformers import AutoTokenizer

    from specbench.model.registry import shipped_path

    tokenizer = AutoTokenizer.from_pretrained(str(shipped_path("tiny-target")))
    questions = load_questions("specbench_mini", question_end=N_PROMPTS)
    return [build_prompt(tokenizer, q, 0, []).input_ids for q in questions], tokenizer.eos_token_id


def session(model):
    return ModelSession(ForwardRunner(model, 1024))


def mean_tau(target, make_drafter, prompts):
    ids, eos = prompts
    ctx = DraftContext(target, SamplingParams())
    drafter = make_drafter(ctx)
    steps = committed = 0
    for prompt in ids:
        g = generate(target, drafter, prompt, max_new_tokens=MAX_NEW, stop_ids=frozenset({eos}))
        steps += g.steps
        committed += sum(g.accept_lengths)
    return committed / steps


@pytest.fixture(scope="module")
def target():
    return session(load_model("tiny-target", dtype=torch.float32))


def draft_model_drafter(model):
    return lambda ctx: build_drafter("draft_model", ctx, session=session(model), num_tokens=5)


def eagle_drafter(head_fn):
    return lambda ctx: build_drafter("eagle", ctx, head=head_fn(ctx.target.model), topk=4, depth=4, tree_size=16)


def test_trained_draft_model_beats_a_random_one(target, prompts):
    trained = load_model("tiny-draft", dtype=torch.float32)
    random = build_model(ModelConfig.from_hf(load_hf_config("tiny-draft")), dtype=torch.float32, seed=1)
    tau_trained = mean_tau(target, draft_model_drafter(trained), prompts)
    tau_random = mean_tau(target, draft_model_drafter(random), prompts)
    assert tau_trained > 1.3, tau_trained
    assert tau_trained > tau_random + 0.25, (tau_trained, tau_random)


def test_trained_eagle_head_beats_a_random_one(target, prompts):
    tau_trained = mean_tau(target, eagle_drafter(lambda m: load_eagle_head("tiny-eagle", m)), prompts)
    tau_random = mean_tau(target, eagle_drafter(lambda m: random_eagle_head(m, seed=1)), prompts)
    assert tau_trained > 1.3, tau_trained
    assert tau_trained > tau_random + 0.5, (tau_trained, tau_random)


def test_w8a8_target_keeps_its_acceptance(target, prompts):
    """A W8A8 (int8, RTN) target verified against the 16-bit drafters: tau within 15 % of the 16-bit target's."""
    w8a8 = session(load_model("tiny-target", dtype=torch.float32,
                              quantizer=build_quantizer("w8a8_int8", "reference", load_hf_config("tiny-target"))))
    draft = load_model("tiny-draft", dtype=torch.float32)
    for make in (draft_model_drafter(draft), eagle_drafter(lambda m: load_eagle_head("tiny-eagle", m))):
        tau16, tau8 = mean_tau(target, make, prompts), mean_tau(w8a8, make, prompts)
        assert abs(tau8 - tau16) <= 0.15 * tau16, (tau16, tau8)


def test_eagle_head_prefill_is_timed_as_drafter_prefill(target):
    """The head consumes the prompt's pairs in observe (the drafter-prefill phase), not in the first draft."""
    from specbench.timing.phases import PhaseTimer

    session = target
    drafter = build_drafter("eagle", DraftContext(session, SamplingParams()), head=random_eagle_head(target.model),
                            topk=4, depth=3, tree_size=12)
    prompt = list(range(10, 40))
    gen = generate(session, drafter, prompt, max_new_tokens=8, timer=PhaseTimer("cpu", enabled=True))
    assert gen.phase_ms[-1]["drafter_prefill"] > 0 and gen.tokens  # step -1: the prefills
    session.reset()
    drafter.reset()
    _, hidden = session.extend(prompt)
    drafter.observe(prompt + [1], hidden, 0)
    assert drafter.pairs == len(prompt) and drafter.pending is None and drafter._root is not None
