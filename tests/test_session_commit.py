"""``ModelSession.commit`` moves exactly the root and the accepted nodes' K/V behind the prefix.

The cache is filled with each slot's own index, so after a commit the slots behind the prefix must read
back the source slots: the root at ``length``, draft node i at ``length + 1 + i``.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from specbench.decoding.draft import Draft
from specbench.decoding.session import ModelSession
from specbench.model.kv_cache import StaticKVCache

SLOTS = 32
PREFIX = 5


def session_after_verify(draft: Draft) -> ModelSession:
    """A session holding PREFIX tokens that has just verified root + ``draft`` (slot s holds the value s)."""
    cache = StaticKVCache(1, 1, 1, SLOTS, torch.float32, "cpu", track_positions=True)
    cache.kv[...] = torch.arange(SLOTS, dtype=torch.float32)[:, None]
    cache.positions[:] = torch.arange(SLOTS)
    runner = SimpleNamespace(model=None, device=torch.device("cpu"), cache=cache, max_seq_len=SLOTS,
                             tree=lambda *args: None)
    session = ModelSession(runner)
    session.tokens = list(range(100, 100 + PREFIX))
    session.verify(50, draft)
    return session


# (parents of the draft nodes, accepted path root to leaf)
CASES = {
    "chain, all accepted": ([-1, 0, 1, 2], [0, 1, 2, 3]),
    "chain, prefix accepted": ([-1, 0, 1, 2], [0, 1]),
    "chain, none accepted": ([-1, 0, 1], []),
    "tree, path through node 0": ([-1, 0, 0, 2, 1], [0, 2, 3]),
    "tree, path from node 0 with a gap": ([-1, -1, 0, 2], [0, 2]),
    "tree, path from a later child": ([-1, -1, 1, 0, 2], [1, 2, 4]),
    "tree, single deep leaf": ([-1, -1, -1, 2], [2, 3]),
}


@pytest.mark.parametrize("case", CASES)
def test_commit_moves_root_and_path_behind_the_prefix(case):
    parents, path = CASES[case]
    draft = Draft([60 + i for i in range(len(parents))], parents)
    session = session_after_verify(draft)
    session.commit(path)
    session.settle()
    sources = [PREFIX] + [PREFIX + 1 + i for i in path]
    kept = slice(PREFIX, PREFIX + len(sources))
    expected = torch.tensor(sources, dtype=torch.float32)
    assert torch.equal(session.runner.cache.k[0, 0, 0, kept, 0], expected), case
    assert torch.equal(session.runner.cache.v[0, 0, 0, kept, 0], expected), case
    assert torch.equal(session.runner.cache.positions[kept], expected.long()), case
    assert torch.equal(session.runner.cache.k[0, 0, 0, :PREFIX, 0], torch.arange(PREFIX, dtype=torch.float32))
    assert session.tokens == list(range(100, 100 + PREFIX)) + [50] + [60 + i for i in path]
    assert session.length == PREFIX + len(sources)
