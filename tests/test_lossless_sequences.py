"""Speculative sampling preserves the target's distribution over a whole generated sequence (fast, synthetic).

Target and draft are bigram lookup tables over a 4-token vocabulary (the next-token logits are a row of a fixed
table, chosen by the last token), so the probability of every 3-token continuation is known exactly:
p(a, b, c) = P[last, a] P[a, b] P[b, c]. The real machinery runs: ``Engine`` sessions over ``ForwardRunner``,
the ``draft_model`` drafter, ``generate`` with its prefill, tree verify, acceptance and commit. The counts of the
generated sequences are compared with the exact probabilities by a chi-square test; the same test must fail
when the rejection's residual correction is broken, and when the nodes below the draft's first are accepted
untested.
"""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
import torch
from torch import nn

from specbench.config import EngineConf
from specbench.decoding.acceptance import accept, accept_sampled
from specbench.decoding.generate import generate
from specbench.decoding.sampling import SamplingParams
from specbench.engine import Engine
from specbench.model.config import ModelConfig
from specbench.model.kv_cache import StaticKVCache
from tests.test_lossless_sampling import accept_untested_below_root, chi_square

VOCAB, LENGTH, N = 4, 3, 1_000  # 64 sequences; 1,000 generations detect both mutations by a wide margin
PROMPT = [0, 1, 2]
# rows: the last token; the draft is close to the target after 0 and 3 (whole drafts get accepted) and favours
# what the target avoids after 1 and 2 (rejections, so the residual matters)
TARGET = torch.tensor([[2.0, 0.0, -1.0, 0.5], [0.0, 1.5, 0.5, -1.0], [-0.5, 0.5, 2.0, 0.0], [1.0, -1.0, 0.0, 1.0]])
DRAFT = torch.tensor([[1.5, 0.0, -0.5, 0.5], [1.5, -1.0, 0.0, 1.0], [1.0, 0.0, -1.0, 1.5], [1.0, -0.5, 0.0, 1.0]])


class Bigram(nn.Module):
    """A causal LM whose next-token logits are ``table[last token]``: the KV cache is kept but never read."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.table = nn.Parameter(table.clone(), requires_grad=False)
        self.config = ModelConfig("llama", vocab_size=VOCAB, hidden_size=VOCAB, intermediate_size=VOCAB,
                                  num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1, head_dim=2)
        self.feature_layers = ()

    def setup_cache(self, max_seq_len: int) -> StaticKVCache:
        self.cache = StaticKVCache(1, 1, 2, max_seq_len, torch.float32, self.table.device)
        return self.cache

    def forward(self, input_ids, positions, slots, mask, layers=None):
        return nn.functional.one_hot(input_ids, VOCAB).float()

    def logits(self, hidden):
        return hidden @ self.table


def exact(params: SamplingParams) -> torch.Tensor:
    """[V, V, V]: the target's probability of each 3-token continuation of ``PROMPT``."""
    p = params.probs(TARGET)
    return p[PROMPT[-1]][:, None, None] * p[:, :, None] * p[None, :, :]


def sequence_counts(params: SamplingParams, acceptor=accept, num_tokens: int = 2) -> tuple[torch.Tensor, Counter]:
    """[V, V, V] counts of the sequences ``generate`` produces over N runs, and how many draft tokens each step
    accepted."""
    engine = Engine(EngineConf(cuda_graphs=False, gemv=False), max_seq_len=16)
    target = engine.session(Bigram(TARGET))
    gen = torch.Generator().manual_seed(7)
    accepted = Counter()

    def counted(*args, **kwargs):
        result = acceptor(*args, **kwargs)
        accepted[len(result.nodes)] += 1
        return result

    drafter = engine.drafter({"name": "draft_model", "num_tokens": num_tokens}, target, params, gen, counted,
                             model=Bigram(DRAFT))
    counts = torch.zeros(VOCAB, VOCAB, VOCAB)
    for _ in range(N):
        out = generate(target, drafter, PROMPT, max_new_tokens=LENGTH, sampling=params, generator=gen,
                       acceptor=counted)
        counts[tuple(out.tokens)] += 1
    return counts, accepted


def broken_correction(draft, logits, params, generator=None):
    return accept_sampled(draft, logits, params, generator, correct_residual=False)


def test_the_exact_distribution_sums_to_one_over_every_sequence():
    probs = exact(SamplingParams(1.0))
    assert probs.shape == (VOCAB,) * LENGTH and abs(float(probs.sum()) - 1) < 1e-6
    p = SamplingParams(1.0).probs(TARGET)
    a, b, c = 3, 0, 2
    assert float(probs[a, b, c]) == pytest.approx(float(p[PROMPT[-1], a] * p[a, b] * p[b, c]))
    assert len(list(itertools.product(range(VOCAB), repeat=LENGTH))) == probs.numel()


@pytest.mark.parametrize("temperature,num_tokens", [(1.0, 2), (0.7, 3)])
def test_generated_sequences_follow_the_target(temperature, num_tokens):
    params = SamplingParams(temperature)
    counts, accepted = sequence_counts(params, num_tokens=num_tokens)
    assert counts.sum() == N
    # rejected at the first draft token, and whole drafts accepted: every branch of the acceptance runs
    assert accepted[0] > N / 10 and accepted[num_tokens] > N / 10, accepted
    stat, limit = chi_square(counts, exact(params))
    assert stat < limit, f"T={temperature}: chi-square {stat:.1f} >= {limit:.1f}"


@pytest.mark.parametrize("mutant", [broken_correction, accept_untested_below_root])
def test_broken_acceptance_is_detected(mutant):
    params = SamplingParams(1.0)
    counts, _ = sequence_counts(params, mutant)
    stat, limit = chi_square(counts, exact(params))
    assert stat > limit, f"{mutant.__name__} went unnoticed (chi-square {stat:.1f} <= {limit:.1f})"
