"""Speculative sampling preserves the target's next-token distribution, for every drafter.

One context is fixed (prompt + a first token); each sample runs a full SD step (drafter prefill, propose,
verify under the tree mask, accept) and records the first token it commits. Its frequencies over 10,000
samples are compared with the target's own sampling distribution by a chi-square test; the same test must
fail when the rejection correction is broken.
"""

from __future__ import annotations

import pytest
import torch

from specbench.decoding import acceptance
from specbench.decoding.sampling import SamplingParams
from tests.drafter_stack import DRAFTERS, Stack

pytestmark = pytest.mark.slow  # minutes on two CPU cores; CI runs it

N = 10_000
VOCAB = 8
CHI2_DF7_P001 = 24.32  # 99.9th percentile of chi-square with 7 degrees of freedom
PROMPT = [1, 2, 3, 1, 2, 3, 1, 2]
FIRST = 3


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    # larger initial weights make every layer matter, so drafts (layer-skip included) differ from the target
    return Stack(tmp_path_factory.mktemp("vocab8"), lm_scale=0.7, initializer_range=0.2, vocab_size=VOCAB,
                 hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1,
                 num_hidden_layers=2)


# small drafts keep 10,000 full SD steps per case affordable on two CPU cores
SMALL = {"draft_model": {"num_tokens": 2}, "layer_skip": {"num_tokens": 2},
         "hierspec": {"min_draft": 2, "inner_depth": 1, "inner_tree_size": 3, "topk": 2}}


def target_probs(stack, params):
    with torch.no_grad():
        logits = stack.hf(torch.tensor([PROMPT + [FIRST]])).logits[0, -1]
    return params.probs(logits)


def sd_first_tokens(stack, name, params, correct_residual=True):
    gen = torch.Generator().manual_seed(1234)
    drafter = stack.drafter(name, params, gen, **SMALL.get(name, {}))
    session = stack.session
    session.reset()
    _, hidden = session.extend(PROMPT)
    tokens = PROMPT + [FIRST]
    drafter.observe(tokens, hidden, 0)  # drafter prefill; each drafter rolls itself back to `tokens` in propose
    counts = torch.zeros(VOCAB)
    fixed = None
    drafted = 0
    for _ in range(N):
        session.truncate(len(PROMPT))
        if fixed is None:
            draft = drafter.propose(tokens, 64)
            logits, _ = session.verify(FIRST, draft)
            if draft.probs is None:  # deterministic proposals: the same draft every time
                fixed = (draft, logits)
        else:
            draft, logits = fixed
        drafted += len(draft) > 0
        result = acceptance.accept_sampled(draft, logits, params, gen, correct_residual=correct_residual)
        counts[result.tokens[0]] += 1
    assert drafted == N, f"{name} proposed nothing in some steps: the test would not exercise it"
    return counts


def chi_square(counts, probs):
    expected = probs * counts.sum()
    big = expected >= 5
    obs = torch.cat([counts[big], counts[~big].sum().reshape(1)])
    exp = torch.cat([expected[big], expected[~big].sum().reshape(1)])
    keep = exp > 0
    return float(((obs[keep] - exp[keep]) ** 2 / exp[keep]).sum())


@pytest.mark.parametrize("temperature", [0.7, 1.0])
@pytest.mark.parametrize("name", DRAFTERS)
def test_sd_preserves_the_target_distribution(stack, name, temperature):
    params = SamplingParams(temperature)
    stat = chi_square(sd_first_tokens(stack, name, params), target_probs(stack, params))
    assert stat < CHI2_DF7_P001, f"{name} at T={temperature}: chi-square {stat:.1f}"


@pytest.mark.parametrize("name", DRAFTERS)
def test_broken_rejection_correction_is_detected(stack, name):
    params = SamplingParams(1.0)
    stat = chi_square(sd_first_tokens(stack, name, params, correct_residual=False), target_probs(stack, params))
    assert stat > CHI2_DF7_P001, f"{name}: breaking the correction went unnoticed (chi-square {stat:.1f})"


def test_top_k_top_p_filtering_is_respected(stack):
    params = SamplingParams(1.0, top_p=0.8, top_k=4)
    probs = target_probs(stack, params)
    assert (probs > 0).sum() <= 4
    stat = chi_square(sd_first_tokens(stack, "draft_model", params), probs)
    assert stat < CHI2_DF7_P001
