"""Speculative sampling preserves the target's distribution over the whole accepted path, for every drafter.

One context is fixed (prompt + a first token). Each trial prefills target and drafter on it and runs full SD
steps (propose, verify under the tree mask, accept, commit) until two tokens are committed; the frequencies
of those token pairs are compared with the target's own joint distribution p(a) p(b | a) by a chi-square
test. The same test must fail when the rejection correction is broken, and when the accept test is skipped
for the nodes below the root (a mutation the first token alone cannot see).
"""

from __future__ import annotations

import math

import pytest
import torch

from specbench.decoding import acceptance
from specbench.decoding.acceptance import Acceptance, accept_sampled
from specbench.decoding.draft import Draft
from specbench.decoding.generate import speculative_step
from specbench.decoding.sampling import SamplingParams, sample
from specbench.decoding.phases import PhaseTimer
from tests.drafter_stack import DRAFTERS, Stack

pytestmark = pytest.mark.slow  # minutes on two CPU cores; CI runs it

N = 1_200
VOCAB = 4  # 16 cells for the pair: 1,200 trials detect each mutation below by a wide margin
DEPTH = 2  # committed tokens per trial whose joint distribution is tested
PROMPT = [1, 2, 3, 1, 2, 3, 1, 2]
FIRST = 3
TREES = ["eagle", "eagle3", "hierspec", "hierspec3"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    # larger initial weights make every layer matter, so drafts (layer-skip included) differ from the target
    return Stack(tmp_path_factory.mktemp("vocab4"), lm_scale=0.7, initializer_range=0.2, vocab_size=VOCAB,
                 hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1,
                 num_hidden_layers=2)


# small drafts keep thousands of full SD steps per case affordable on two CPU cores; every draft has depth >= 2
SMALL = {"draft_model": {"num_tokens": 2}, "layer_skip": {"num_tokens": 2}, "eagle": {"depth": 2, "tree_size": 6},
         "hierspec": {"min_draft": 2, "inner_depth": 1, "inner_tree_size": 3, "topk": 2}}
SMALL["eagle3"], SMALL["hierspec3"] = SMALL["eagle"], SMALL["hierspec"]


def target_joint(stack, params) -> torch.Tensor:
    """[V, V]: the target's probability of committing token a then token b after the context."""
    with torch.no_grad():
        first = params.probs(stack.hf(torch.tensor([PROMPT + [FIRST]])).logits[0, -1])
        pairs = torch.tensor([PROMPT + [FIRST, a] for a in range(VOCAB)])
        second = params.probs(stack.hf(pairs).logits[:, -1])
    return first[:, None] * second


def sd_pairs(stack, name, params, acceptor=acceptance.accept) -> torch.Tensor:
    """[V, V] counts of the first two tokens SD commits after the context, over N trials."""
    gen = torch.Generator().manual_seed(1234)
    drafter = stack.drafter(name, params, gen, **SMALL.get(name, {}))
    session, timer = stack.session, PhaseTimer("cpu", enabled=False)
    counts = torch.zeros(VOCAB, VOCAB)
    deep = 0
    with torch.inference_mode():
        session.reset()
        _, hidden = session.extend(PROMPT)
        for _ in range(N):
            session.truncate(len(PROMPT))  # the prompt's K/V stay; the drafter prefills afresh
            drafter.reset()
            tokens = PROMPT + [FIRST]
            drafter.observe(tokens, hidden, 0)
            while len(tokens) < len(PROMPT) + 1 + DEPTH:
                draft, _ = speculative_step(session, drafter, tokens, params, gen, timer, acceptor)
                deep += max(draft.depths, default=0) >= 2
            counts[tokens[len(PROMPT) + 1], tokens[len(PROMPT) + 2]] += 1
    assert deep >= N, f"{name} drafted below the root's children too rarely: the test would not exercise it"
    return counts


def chi_square(counts: torch.Tensor, probs: torch.Tensor) -> tuple[float, float]:
    """(statistic, its 99.9th percentile under the null) over the cells, those expecting < 5 pooled."""
    counts, expected = counts.flatten(), probs.flatten() * counts.sum()
    big = expected >= 5
    obs = torch.cat([counts[big], counts[~big].sum().reshape(1)])
    exp = torch.cat([expected[big], expected[~big].sum().reshape(1)])
    keep = exp > 0
    stat = float(((obs[keep] - exp[keep]) ** 2 / exp[keep]).sum())
    df = int(keep.sum()) - 1
    z = 3.0902  # standard normal 99.9th percentile; Wilson-Hilferty approximation of the chi-square quantile
    return stat, df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def accept_untested_below_root(draft: Draft, logits: torch.Tensor, params: SamplingParams, generator=None):
    """A broken acceptance rule (mutation): the root's children are tested, deeper nodes accepted untested."""
    top = draft.children[0]
    probs = None if draft.probs is None else draft.probs[top]
    shallow = accept_sampled(Draft([draft.tokens[c] for c in top], [-1] * len(top), probs),
                             logits[[0] + [c + 1 for c in top]], params, generator)
    if not shallow.nodes:
        return shallow
    nodes = [top[shallow.nodes[0]]]
    while draft.children[nodes[-1] + 1]:
        nodes.append(draft.children[nodes[-1] + 1][0])
    bonus = int(sample(params.probs(logits[nodes[-1] + 1]), generator))
    return Acceptance(nodes, [draft.tokens[i] for i in nodes] + [bonus])


def broken_correction(draft, logits, params, generator=None):
    return accept_sampled(draft, logits, params, generator, correct_residual=False)


@pytest.mark.parametrize("temperature", [0.7, 1.0])
@pytest.mark.parametrize("name", DRAFTERS)
def test_sd_preserves_the_joint_distribution_of_the_accepted_path(stack, name, temperature):
    params = SamplingParams(temperature)
    stat, limit = chi_square(sd_pairs(stack, name, params), target_joint(stack, params))
    assert stat < limit, f"{name} at T={temperature}: chi-square {stat:.1f} >= {limit:.1f}"


@pytest.mark.parametrize("name,mutant", [("draft_model", broken_correction), ("eagle", broken_correction),
                                         ("draft_model", accept_untested_below_root),
                                         *((name, accept_untested_below_root) for name in TREES)])
def test_broken_acceptance_is_detected(stack, name, mutant):
    params = SamplingParams(1.0)
    stat, limit = chi_square(sd_pairs(stack, name, params, mutant), target_joint(stack, params))
    assert stat > limit, f"{name}: {mutant.__name__} went unnoticed (chi-square {stat:.1f} <= {limit:.1f})"


def test_top_k_top_p_filtering_is_respected(stack):
    params = SamplingParams(1.0, top_p=0.7, top_k=3)
    joint = target_joint(stack, params)
    assert (joint.sum(1) > 0).sum() <= 2  # top-p keeps the two likeliest first tokens
    stat, limit = chi_square(sd_pairs(stack, "draft_model", params), joint)
    assert stat < limit
