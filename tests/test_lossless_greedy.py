"""Greedy speculative decoding reproduces the target's greedy output token for token, for every drafter."""

from __future__ import annotations

import pytest
import torch

from specbench.decoding.generate import generate
from tests.drafter_stack import DRAFTERS, Stack

N_PROMPTS = 20
FAST = 6  # prompts of the fast subset (with the two multi-turn ones); the other 14 are marked slow


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    return Stack(tmp_path_factory.mktemp("stack"), num_hidden_layers=4)


def prompts():
    g = torch.Generator().manual_seed(0)
    out = []
    for i in range(N_PROMPTS):
        n = 4 + i % 9
        out.append(torch.randint(3, 96, (n,), generator=g).tolist())
    return out


def multi_turn(stack, ar, first_turn, second_user):
    """A two-turn prompt: turn one, the target's own greedy answer to it, then the second user message."""
    answer = generate(stack.session, ar, first_turn, max_new_tokens=12).tokens
    return first_turn + answer + second_user


@pytest.fixture(scope="module")
def greedy_ar(stack):
    """(prompt, the target's greedy AR generation) for every prompt, two multi-turn ones included: computed once
    for every drafter's comparison."""
    ar = stack.drafter("none")
    cases = prompts()
    cases = [multi_turn(stack, ar, cases[0], [5, 6, 7]), multi_turn(stack, ar, cases[1], [9, 9])] + cases
    return [(prompt, generate(stack.session, ar, prompt, max_new_tokens=32)) for prompt in cases]


def test_ar_matches_transformers_generate(stack):
    for prompt in prompts()[:5]:
        ids = torch.tensor([prompt])
        ref = stack.hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=24, do_sample=False,
                                eos_token_id=None, pad_token_id=0)[0, len(prompt):].tolist()
        assert generate(stack.session, stack.drafter("none"), prompt, max_new_tokens=24).tokens == ref


@pytest.mark.parametrize("cases", [slice(0, FAST + 2), pytest.param(slice(FAST + 2, None), marks=pytest.mark.slow)],
                         ids=["fast", "rest"])
@pytest.mark.parametrize("name", DRAFTERS)
@pytest.mark.parametrize("strong", [False, True])
def test_greedy_sd_equals_greedy_ar(stack, greedy_ar, name, strong, cases):
    accepted_any = 0
    drafter = stack.drafter(name, strong=strong)  # one drafter for every prompt, as a run uses it
    for prompt, ar in greedy_ar[cases]:
        sd = generate(stack.session, drafter, prompt, max_new_tokens=32)
        assert sd.tokens == ar.tokens, f"{name} diverged on prompt {prompt}"
        assert sd.tau >= 1 and sd.steps == len(sd.tokens) - 1 if sd.tau == 1 else sd.tau >= 1
        assert sum(sd.accept_lengths) == len(sd.tokens) - 1
        accepted_any += sum(sd.accept_lengths) - sd.steps
    if strong or name == "ngram":
        assert accepted_any > 0, f"{name} never had a draft token accepted: the test would prove nothing"


@pytest.mark.parametrize("name", DRAFTERS)
def test_eos_inside_an_accepted_draft_stops_exactly_there(stack, name):
    """Pick as EOS a token that SD commits in the middle of a multi-token step; both must stop right there."""
    drafter = stack.drafter(name, strong=True)
    for prompt in prompts():
        free = generate(stack.session, drafter, prompt, max_new_tokens=40)
        position, start = None, 1
        for length in free.accept_lengths:  # a token first seen inside a step, not as its last (bonus) token
            inside = [p for p in range(start, start + length - 1) if free.tokens.index(free.tokens[p]) == p]
            if inside:
                position = inside[0]
                break
            start += length
        if position is not None:
            break
    assert position is not None, f"{name} never committed a new token inside a multi-token step"
    eos = frozenset({free.tokens[position]})
    ar = generate(stack.session, stack.drafter("none"), prompt, max_new_tokens=40, stop_ids=eos)
    # a fresh drafter: building the AR one reset the target's EAGLE-3 feature layers
    sd = generate(stack.session, stack.drafter(name, strong=True), prompt, max_new_tokens=40, stop_ids=eos)
    assert sd.tokens == ar.tokens == free.tokens[: position + 1]
    assert sd.stop_reason == "eos"


def test_counters_ar_is_exactly_one(stack):
    ar = generate(stack.session, stack.drafter("none"), prompts()[0], max_new_tokens=16)
    assert ar.tau == 1.0 and ar.steps == 15 and ar.drafted == [0] * 15


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("name", DRAFTERS)
def test_greedy_sd_equals_greedy_ar_with_cuda_graphs(tmp_path, name):
    """The GPU path: graph replays, pinned staging of inputs and commit indices, asynchronous copies."""
    stack = Stack(tmp_path, num_hidden_layers=4, device="cuda")
    ar, drafter = stack.drafter("none"), stack.drafter(name, strong=True)
    accepted = 0
    for prompt in prompts()[:6]:
        expected = generate(stack.session, ar, prompt, max_new_tokens=32)
        got = generate(stack.session, drafter, prompt, max_new_tokens=32)
        assert got.tokens == expected.tokens, name
        accepted += sum(a - 1 for a in got.accept_lengths)
    assert accepted > 0, f"{name} never accepted a draft token: the comparison tested nothing"
