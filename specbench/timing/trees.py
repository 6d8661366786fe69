"""Synthetic drafts of a given size for timing: EAGLE-2-shaped trees and chains (token values do not matter)."""

from __future__ import annotations

import torch

from specbench.decoding.draft import Draft


def level_widths(nodes: int, depth: int, topk: int) -> list[int]:
    """How many of ``nodes`` draft nodes sit at each depth 1..depth of an EAGLE-2-shaped tree.

    EAGLE-2 keeps the best candidates by cumulative log-probability, so shallow levels hold more nodes: level L
    gets a share proportional to ``depth - L + 1``, at least one node while nodes remain, and at most ``topk``
    children per node of the level above (``topk`` at level 1).
    """
    if nodes < 0 or depth < 1 or topk < 1:
        raise ValueError("need nodes >= 0, depth >= 1, topk >= 1")
    depth = min(depth, nodes) if nodes else 0
    if depth == 0:
        return []
    weights = [depth - level for level in range(depth)]
    widths = [1] * depth
    left = nodes - depth
    total = sum(weights)
    for level in range(depth):  # proportional shares of what is left, floored
        widths[level] += int(left * weights[level] / total)
    level = 0
    while sum(widths) < nodes:  # hand out the remainder, shallow levels first
        widths[level % depth] += 1
        level += 1
    for level in range(depth):  # respect topk children per parent; push overflow deeper (or shallower)
        cap = topk if level == 0 else topk * widths[level - 1]
        if widths[level] > cap:
            over, widths[level] = widths[level] - cap, cap
            nxt = level + 1 if level + 1 < depth else None
            if nxt is None:
                raise ValueError(f"{nodes} nodes do not fit a tree of depth {depth} with topk {topk}")
            widths[nxt] += over
    return widths


def eagle_like_tree(n: int, *, depth: int = 6, topk: int = 10, vocab_size: int = 32000, seed: int = 0) -> Draft:
    """A draft of ``n - 1`` nodes (``n`` verified tokens with the root) shaped like an EAGLE-2 tree.

    Levels follow ``level_widths``; node j of a level hangs off node ``j * parents // width`` of the level above,
    so the first parents carry the most children. Token ids are random: values do not matter for timing.
    """
    if n < 1:
        raise ValueError("n counts the root, so n >= 1")
    widths = level_widths(n - 1, depth, topk)
    parents: list[int] = []
    previous: list[int] = []  # node indices of the level above (empty: the root)
    for width in widths:
        level = []
        for j in range(width):
            parents.append(-1 if not previous else previous[j * len(previous) // width])
            level.append(len(parents) - 1)
        previous = level
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab_size, (len(parents),), generator=g).tolist()
    return Draft(tokens, parents)


def chain_draft(n: int, *, vocab_size: int = 32000, seed: int = 0) -> Draft:
    """A sequence draft of ``n - 1`` tokens (``n`` verified tokens with the root)."""
    if n < 1:
        raise ValueError("n counts the root, so n >= 1")
    g = torch.Generator().manual_seed(seed)
    return Draft.chain(torch.randint(0, vocab_size, (n - 1,), generator=g).tolist())
