"""CUDA-graph replay (``decoding.graphs``): a graph freed while another one is captured does not end that capture; a
capture split into pieces replays as the whole."""

from types import SimpleNamespace

import pytest
import torch

from specbench.config import EngineConf, ModelConf
from specbench.decoding import graphs
from specbench.decoding.forward import _break_graphs_between_layers, piece_starts
from specbench.decoding.graphs import GraphedCall, graph_break
from specbench.engine import Engine
from specbench.timing.trees import eagle_like_tree


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


def test_pieces_double_and_cover_every_layer():
    for layers in range(1, 130):
        starts = piece_starts(layers)
        sizes = [b - a for a, b in zip([0, *starts], [*starts, layers])]
        assert sum(sizes) == layers and all(s > 0 for s in sizes)
        assert sizes[:-1] == [2**k for k in range(len(sizes) - 1)] and sizes[-1] <= 2 ** (len(sizes) - 1), layers
    assert piece_starts(32) == [1, 3, 7, 15, 31] and piece_starts(1) == []


def test_graph_break_splits_only_inside_a_split_capture(monkeypatch):
    capture = SimpleNamespace(splits=True, pieces=1)
    capture.split = lambda: setattr(capture, "pieces", capture.pieces + 1)
    graph_break()  # no capture in progress
    monkeypatch.setattr(graphs, "_capturing", capture)
    graph_break(), graph_break()
    assert capture.pieces == 3
    capture.splits = False
    graph_break()
    assert capture.pieces == 3


def test_a_model_gets_its_break_hooks_once():
    engine = Engine(EngineConf(), device="cpu", dtype="float32", max_seq_len=64)
    model = engine.model(ModelConf("tiny-target", shape_only=True))
    for _ in range(2):
        _break_graphs_between_layers(model)
    hooked = [len(layer._forward_pre_hooks) for layer in model.model.layers]
    assert hooked == [0, 1, 0, 1, 0, 0]  # six layers: pieces [0], [1, 2], [3, 4, 5]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_split_capture_replays_its_pieces_in_order():
    def fn(t):
        doubled = t * 2
        graph_break()
        plus = doubled + 1  # reads the first piece's output
        graph_break()
        return plus * plus, doubled

    split, whole = GraphedCall(fn, split=True), GraphedCall(fn)
    for value in (1.0, 3.0, -2.0):
        x = torch.full((8,), value, device="cuda")
        for call in (split, whole):
            square, doubled = call(x)
            assert square.tolist() == [(2 * value + 1) ** 2] * 8 and doubled.tolist() == [2 * value] * 8
    assert len(split.graphs) == 3 and len(whole.graphs) == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("compile_scope", [None, "layer"])
def test_a_forward_captured_in_pieces_equals_one_captured_whole(compile_scope):
    outputs, pieces = {}, {}
    tree = eagle_like_tree(12, depth=3, topk=3, vocab_size=100, seed=0)
    for split in (True, False):
        engine = Engine(EngineConf(compile=compile_scope is not None, compile_scope=compile_scope,
                                   split_graphs=split), device="cuda", dtype="float16", max_seq_len=128)
        session = engine.session(engine.model(ModelConf("tiny-target", shape_only=True)))
        session.extend(list(range(3, 30)))
        outputs[split] = [t.clone() for t in session.verify(5, tree)]
        pieces[split] = {len(call.graphs) for call in session.runner._graphs.values()}
    assert pieces == {True: {3}, False: {1}}  # six layers: [0], [1, 2], [3, 4, 5]
    for a, b in zip(outputs[True], outputs[False]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
