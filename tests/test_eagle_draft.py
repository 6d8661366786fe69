"""EAGLE-2's candidate scoring: top-k log-probabilities without a full log-softmax."""

import textwrap

import pytest
import torch

from specbench.drafters.top_k import TORCH_CHUNK, top_log_probs
from tests.conftest import run_in_interpreter


@pytest.mark.parametrize("shape", [(10, 128256), (128256,), (3, 4 * TORCH_CHUNK + 1), (7, 100)])
def test_top_log_probs_equal_log_softmax_top_k(shape):
    torch.manual_seed(len(shape))
    logits = torch.randn(*shape, dtype=torch.bfloat16) * 4
    logits[..., -1] = logits.max() + 1  # the best id in the padded last chunk
    ids, values = top_log_probs(logits, 10)
    ref = torch.log_softmax(logits.float(), -1).topk(10)
    # logsumexp and log_softmax sum exp(.) over up to 128k entries in different orders (CPU kernels differ by
    # machine): float32 rounding of ~sqrt(V) * 6e-8 relative to the log-sum
    torch.testing.assert_close(values, ref.values, atol=1e-4, rtol=1e-5)
    assert torch.equal(torch.gather(logits.float(), -1, ids), torch.gather(logits.float(), -1, ref.indices))
    assert (ids[..., 0] == shape[-1] - 1).all()


# the GPU's two kernels against torch's top-k: a partial last chunk, a tie at the top, k = the vocabulary
INTERPRETED = textwrap.dedent("""
import torch
from specbench.drafters.top_k import chunked_top_k, torch_top_log_probs, BLOCK
torch.manual_seed(0)
for rows, vocab, k in [(3, 2 * BLOCK + 37, 10), (1, 500, 4), (10, 5 * BLOCK, 10), (2, 12, 12)]:
    x = torch.randn(rows, vocab) * 4
    x[0, -1] = x.max() + 1  # the best id in the last, partial chunk
    x[-1, 3] = x[-1, 5] = x[-1].max() + 2  # a tie at the top: the lower id first
    ids, values = chunked_top_k(x, k)
    ref_ids, ref_values = torch_top_log_probs(x, k)
    assert ids.dtype == torch.int64 and values.dtype == torch.float32, (ids.dtype, values.dtype)
    torch.testing.assert_close(values, ref_values, rtol=1e-5, atol=1e-5)
    assert torch.equal(x.gather(-1, ids), x.gather(-1, ref_ids)), (rows, vocab, k)
    assert ids[-1, :2].tolist() == [3, 5], ids[-1]
    assert rows == 1 or ids[0, 0].item() == vocab - 1
print("ok")
""")


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU test; the GPU test compiles the kernels itself")
def test_top_k_kernels_match_torch_in_the_interpreter():
    assert run_in_interpreter(INTERPRETED) == "ok"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_top_k_kernels_match_torch_on_the_gpu_eager_and_compiled(dtype):
    from specbench.drafters.top_k import torch_top_log_probs

    torch.manual_seed(0)
    logits = (torch.randn(10, 128256, device="cuda") * 4).to(dtype)
    ref_ids, ref_values = torch_top_log_probs(logits, 10)
    compiled = torch.compile(top_log_probs, fullgraph=True, dynamic=False)
    for ids, values in (top_log_probs(logits, 10), compiled(logits, 10)):
        torch.testing.assert_close(values, ref_values, rtol=1e-5, atol=1e-5)
        assert torch.equal(logits.gather(-1, ids), logits.gather(-1, ref_ids))


def test_tree_selection_keeps_every_parent_when_a_child_scores_above_it():
    """A near-certain child's cumulative log-prob can round above its parent's (on a GPU, a log-prob of +1e-7);
    the selection must still keep parents with their children (the run that found this: KeyError in propose)."""
    from specbench.drafters.eagle import select_tree

    # pool: 0, 1 at depth 1; 2 (child of 0) rounds above 0; 3 (child of 2) above both; 4 (child of 1)
    scores = torch.tensor([-0.5, -0.6, -0.5 + 1e-7, -0.5 + 2e-7, -0.7])
    parents = torch.tensor([-1, -1, 0, 2, 1])
    tokens = torch.tensor([10, 11, 12, 13, 14])
    for budget in range(1, 6):
        toks, nodes, nan = select_tree(tokens, scores, parents, budget).tolist()
        keep = [t - 10 for t in toks]
        assert len(keep) == budget and keep == sorted(keep) and nan == [0] * budget
        assert all((p < 0) == (parents[c] < 0) and (p < 0 or keep[p] == parents[c]) for c, p in zip(keep, nodes))
    toks, nodes, _ = select_tree(tokens, scores, parents, 3).tolist()
    assert toks == [10, 12, 13] and nodes == [-1, 0, 1]  # the chain, by pool order among ties


def test_log_probs_never_exceed_zero():
    logits = torch.full((2, 300), -1e4)
    logits[:, 7] = 60.0  # one near-certain id: its log-prob is 0 up to rounding
    _, values = top_log_probs(logits, 4)
    assert (values <= 0).all() and values[:, 0].abs().max() < 1e-6


def test_nan_scores_are_counted_and_refused():
    from specbench.drafters.eagle import refuse_nan, select_tree

    scores, parents = [-0.1, -0.2, float("nan"), -0.3], [-1, -1, 0, 1]
    rows = select_tree(torch.arange(4), torch.tensor(scores), torch.tensor(parents), 2)
    assert rows[2].tolist() == [1, 1]
    with pytest.raises(FloatingPointError, match="NaN cumulative log-probs .*pool index 2 at depth 2, parent 0"):
        refuse_nan(scores, parents)
