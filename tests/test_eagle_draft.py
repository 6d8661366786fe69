"""EAGLE-2's candidate scoring: top-k log-probabilities without a full log-softmax."""

import pytest
import torch

from specbench.drafters.eagle import TOPK_CHUNK, top_log_probs


@pytest.mark.parametrize("shape", [(10, 128256), (128256,), (3, 4 * TOPK_CHUNK + 1), (7, 100)])
def test_top_log_probs_equal_log_softmax_top_k(shape):
    torch.manual_seed(len(shape))
    logits = torch.randn(*shape, dtype=torch.bfloat16) * 4
    logits[..., -1] = logits.max() + 1  # the best id in the padded last chunk
    ids, values = top_log_probs(logits, 10)
    ref = torch.log_softmax(logits.float(), -1).topk(10)
    torch.testing.assert_close(values, ref.values)
    assert torch.equal(torch.gather(logits.float(), -1, ids), torch.gather(logits.float(), -1, ref.indices))
    assert (ids[..., 0] == shape[-1] - 1).all()


def test_exact_ranking_keeps_every_parent_when_a_child_scores_above_it():
    """A near-certain child's cumulative log-prob can round above its parent's (on a GPU, a log-prob of +1e-7);
    the exact ranking must still keep parents with their children (the run that found this: KeyError in propose)."""
    from specbench.drafters.eagle import EagleDrafter

    # pool: 0, 1 at depth 1; 2 (child of 0) rounds above 0; 3 (child of 2) above both; 4 (child of 1)
    scores = [-0.5, -0.6, -0.5 + 1e-7, -0.5 + 2e-7, -0.7]
    parents = [-1, -1, 0, 2, 1]
    for budget in range(1, 6):
        keep = EagleDrafter.rank_exactly(scores, parents, budget)
        assert len(keep) == budget and keep == sorted(keep)
        assert all(parents[c] < 0 or parents[c] in keep for c in keep), (budget, keep)
    assert EagleDrafter.rank_exactly(scores, parents, 3) == [0, 2, 3]  # the chain, by pool order among ties


def test_log_probs_never_exceed_zero():
    logits = torch.full((2, 300), -1e4)
    logits[:, 7] = 60.0  # one near-certain id: its log-prob is 0 up to rounding
    _, values = top_log_probs(logits, 4)
    assert (values <= 0).all() and values[:, 0].abs().max() < 1e-6


def test_exact_ranking_refuses_nan_scores():
    from specbench.drafters.eagle import EagleDrafter

    with pytest.raises(FloatingPointError, match="NaN cumulative log-probs .*pool index 2 at depth 2, parent 0"):
        EagleDrafter.rank_exactly([-0.1, -0.2, float("nan"), -0.3], [-1, -1, 0, 1], 2)
