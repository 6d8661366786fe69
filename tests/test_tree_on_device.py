"""A draft verified from its device tensors gets exactly the inputs and outputs of one staged from the host."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from specbench.decoding.draft import Draft
from specbench.decoding.forward import ForwardRunner
from specbench.model import load_model
from specbench.timing.trees import chain_draft, eagle_like_tree

START = 9


@pytest.fixture(scope="module")
def runner():
    return ForwardRunner(load_model("tiny-target", dtype=torch.float32), 64)


def inputs_of(runner, call):
    """The (index, mask) a runner call hands its forward."""
    step, runner._step = runner._step, lambda inputs, layers: inputs
    try:
        return call()
    finally:
        runner._step = step


DRAFTS = {"tree": eagle_like_tree(25, depth=5, topk=3, vocab_size=100), "chain": chain_draft(6, vocab_size=100),
          "root only": Draft.empty(), "deep chain": chain_draft(40, vocab_size=100)}


@pytest.mark.parametrize("name", DRAFTS)
@pytest.mark.parametrize("pad", [0, 5])
def test_device_inputs_equal_the_host_staged_ones(runner, name, pad):
    draft = DRAFTS[name]
    n = len(draft) + 1
    on_device = torch.tensor([draft.tokens, draft.parents], dtype=torch.long).view(2, len(draft))
    index, mask = inputs_of(runner, lambda: runner.tree([7] + draft.tokens, [0] + draft.depths, START,
                                                        draft.ancestor_array()))
    expected = runner.pad(n + pad, *index, mask)
    got = runner.device_tree_inputs(torch.tensor([7, START]), on_device, n + pad)
    assert torch.equal(got[0], torch.stack(expected[:3])) and torch.equal(got[1], expected[3])


def test_a_device_draft_verifies_like_the_host_one(runner):
    draft = DRAFTS["tree"]
    rows = torch.tensor([draft.tokens, draft.parents, [0] * len(draft)])
    lazy = Draft.from_device(rows)
    logits, hidden = runner.tree_on_device(7, lazy.on_device, START)
    ref_logits, ref_hidden = runner.tree([7] + draft.tokens, [0] + draft.depths, START, draft.ancestor_array())
    assert torch.equal(logits, ref_logits) and torch.equal(hidden, ref_hidden)
    assert len(lazy) == len(draft) and lazy.parents == draft.parents and lazy.depths == draft.depths


def test_best_only_gives_each_rows_argmax(runner):
    on_device = torch.tensor([DRAFTS["tree"].tokens, DRAFTS["tree"].parents])
    logits, hidden = runner.tree_on_device(7, on_device, START)
    best, best_hidden = runner.tree_on_device(7, on_device, START, best_only=True)
    assert torch.equal(best, logits.argmax(-1)) and torch.equal(best_hidden, hidden)


def test_a_chain_on_device_gives_its_last_real_rows_logits_or_argmax(runner):
    ids = torch.tensor([11, 12, 13, 0, 0])  # three real tokens, two padding rows
    logits, hidden = runner.chain_on_device(ids, torch.tensor(3), torch.tensor(START))
    ref_logits, ref_hidden = runner.tree([11, 12, 13], [0, 1, 2], START, np.tril(np.ones((3, 3), dtype=bool)))
    torch.testing.assert_close(logits, ref_logits[-1])
    torch.testing.assert_close(hidden, ref_hidden[-1])
    best, best_hidden = runner.chain_on_device(ids, torch.tensor(3), torch.tensor(START), best_only=True)
    assert best.shape == () and int(best) == int(logits.argmax()) and torch.equal(best_hidden, hidden)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("compile_scope", [None, "layer"])
def test_best_only_in_a_compiled_graph_gives_each_rows_argmax(compile_scope):
    runner = ForwardRunner(load_model("tiny-target", dtype=torch.bfloat16, device="cuda"), 64, cuda_graphs=True,
                           compile=True, compile_scope=compile_scope)
    draft = DRAFTS["tree"]
    on_device = torch.tensor([draft.tokens, draft.parents], device="cuda")
    start = torch.tensor([7, START], device="cuda")
    for _ in range(2):  # the capture, then a replay
        logits, hidden = (t.clone() for t in runner.tree_on_device(None, on_device, start))
        best, best_hidden = runner.tree_on_device(None, on_device, start, best_only=True)
        assert same_graph_argmax(best, best_hidden, logits, hidden, exact=compile_scope == "layer")
        count = torch.tensor(3, device="cuda")
        last, last_hidden = (t.clone() for t in runner.chain_on_device(on_device[0, :5], count, start[1]))
        best, best_hidden = runner.chain_on_device(on_device[0, :5], count, start[1], best_only=True)
        assert same_graph_argmax(best, best_hidden, last, last_hidden, exact=compile_scope == "layer")


def same_graph_argmax(best, best_hidden, logits, hidden, exact: bool) -> bool:
    """Whether the best-only graph's argmax and hidden rows match the full graph's logits and hidden rows: equal when
    both graphs run the same kernels (compiled per layer); compiled whole, inductor generates each graph's kernels apart
    (one ends in logits, the other in their argmax) and may fuse and round a hidden value one bf16 step (2^-7
    relative) apart, so the rows agree to that and the argmax only where the top two logits are further apart than
    that step can move them."""
    picked = best == logits.argmax(-1)
    if exact:
        return bool(picked.all()) and torch.equal(best_hidden, hidden)
    top2 = logits.float().topk(2, dim=-1).values
    tie = top2[..., 0] - top2[..., 1] <= 2**-6 * top2[..., 0].abs()
    return (torch.allclose(best_hidden, hidden, rtol=2**-7, atol=2**-7 * float(hidden.abs().max()))
            and bool((picked | tie).all())
            and bool(picked.float().mean() >= 0.5))  # a tie is the exception, not the rule


def test_a_device_draft_is_checked_when_first_read():
    def refuse(rows):
        raise FloatingPointError(f"flag {rows[2][0]}")

    lazy = Draft.from_device(torch.tensor([[5, 6], [-1, 0], [3, 3]]), refuse)
    assert len(lazy) == 2  # the size needs no host copy
    with pytest.raises(FloatingPointError, match="flag 3"):
        lazy.tokens
    with pytest.raises(ValueError, match="parents-first"):
        Draft.from_device(torch.tensor([[5, 6], [1, 0]])).tokens


def test_eagle_drafts_fewer_nodes_near_the_end_of_the_cache_and_stays_lossless():
    """With less room than the tree, the draft is cut to the room (parents kept) and read on the host; greedy SD
    still equals greedy AR up to the last slot."""
    from specbench.config import EngineConf, ModelConf
    from specbench.decoding.generate import generate
    from specbench.engine import Engine

    engine = Engine(EngineConf(cuda_graphs=False, gemv=False), max_seq_len=48)
    session = engine.session(engine.model(ModelConf("tiny-target")))
    eagle = engine.drafter({"name": "eagle", "head": "tiny-eagle", "topk": 3, "depth": 3, "tree_size": 10}, session)
    prompt = list(range(5, 35))
    ar = generate(session, engine.drafter({"name": "none"}, session), prompt, max_new_tokens=17)
    sizes = []
    propose = eagle.propose

    def recorded(tokens, room):
        draft = propose(tokens, room)
        sizes.append((room, len(draft), draft.on_device is None))
        assert all(-1 <= p < i for i, p in enumerate(draft.parents))
        return draft

    eagle.propose = recorded
    sd = generate(session, eagle, prompt, max_new_tokens=17)
    assert sd.tokens == ar.tokens
    assert any(room < 9 for room, _, _ in sizes)
    assert all(n == min(room, 9) and on_host == (room < 9) for room, n, on_host in sizes)
