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
