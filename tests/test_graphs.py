"""CUDA-graph replay (``decoding.graphs``): a graph freed while another one is captured does not end that capture."""

import pytest
import torch

from specbench.decoding.graphs import GraphedCall


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_graph_freed_during_another_capture_leaves_that_capture_whole():
    x = torch.ones(4, device="cuda")
    old = [GraphedCall(lambda t: t * 2)]
    assert old[0](x).tolist() == [2.0] * 4

    def add_one_dropping_the_old_graph(t):
        if torch.cuda.is_current_stream_capturing():
            old.clear()  # the old graph's last reference goes inside the capture
        return t + 1

    new = GraphedCall(add_one_dropping_the_old_graph)
    assert new(x).tolist() == [2.0] * 4 and not old
    assert new(torch.full((4,), 5.0, device="cuda")).tolist() == [6.0] * 4  # the captured graph replays
