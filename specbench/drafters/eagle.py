"""EAGLE-2 dynamic-tree drafting with an EAGLE head (EAGLE-1/2's, or EAGLE-3's: ``eagle3``).

Each step the head first consumes the (feature, next token) pairs the target just committed; its last
output predicts the root's feature and, through the LM head, the root's children. Then ``depth - 1`` more
passes expand the tree: every pass feeds the ``topk`` best frontier nodes, each of which proposes its
``topk`` best children, and the ``topk`` best of those k² children (by cumulative log-probability) form the
next frontier. The candidate pool is k + (depth-1)·k²; the ``tree_size - 1`` candidates with the best
cumulative log-probability are verified (``tree_size`` counts the root, as in SpecMQuant's flags). Top-k
proposals are deterministic, so sampling verification treats them as point masses. The head chooses the target
states it reads (``DraftHead.features``) and maps its top-k ids to target ids (``DraftHead.target_ids``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from specbench.config import require
from specbench.decoding.draft import Draft
from specbench.decoding.drafter import DraftContext, Drafter
from specbench.decoding.forward import ForwardRunner
from specbench.decoding.graphs import GraphedCall
from specbench.drafters.eagle_head import DraftHead
from specbench.drafters.registry import DrafterConf, Parts, register
from specbench.drafters.top_k import top_log_probs
from specbench.model.footprint import forward_bytes
from specbench.model.kv_cache import causal_mask


@dataclass
class EagleConf(DrafterConf):
    """EAGLE-2's dynamic tree; 2505.22179: k=10, d=6, n=60 (8B) / 48 (70B)."""

    name: str = "eagle"
    head: str = "tiny-eagle"  # hub id, folder, or "random" for shape-only timing
    topk: int = 10
    depth: int = 6
    tree_size: int = 60

    def check(self, prefix="drafter"):
        require(self.topk >= 1, f"{prefix}.topk", self.topk, "an integer >= 1")
        require(self.depth >= 1, f"{prefix}.depth", self.depth, "an integer >= 1")
        require(self.tree_size >= 2, f"{prefix}.tree_size", self.tree_size, "an integer >= 2 (the root and a node)")

    def step_shape(self):
        return int(self.tree_size), ("tree",), int(self.depth), int(self.topk)


class EagleDrafter(Drafter):
    name = "eagle"
    drafts_on_device = True

    def __init__(self, ctx: DraftContext, head: DraftHead, topk: int, depth: int, tree_size: int):
        super().__init__(ctx)
        limit = ctx.target.runner.buckets[-1]
        if tree_size > limit:
            raise ValueError(f"eagle.tree_size={tree_size} is outside what the verifier supports (2…{limit} "
                             "tokens including the root); lower eagle.tree_size")
        self.head, self.topk, self.depth, self.tree_size = head, topk, depth, tree_size
        self.device_depth, self.device_tree_size = depth, tree_size
        self.target_features = head.target_layers
        ctx.target.model.feature_layers = self.target_features  # what the target's forwards return for the head
        target_runner = ctx.target.runner
        self.runner = ForwardRunner(head, target_runner.max_seq_len + depth * topk,
                                    cuda_graphs=target_runner.cuda_graphs, buckets=target_runner.buckets,
                                    compile=target_runner.compiled, compile_mode=target_runner.compile_mode,
                                    compile_scope=target_runner.compile_scope)
        self.pairs = 0  # (feature, next token) pairs in the head's cache: positions 0 … pairs-1
        self.pending: tuple[torch.Tensor, int] | None = None
        self._expand_graph: GraphedCall | None = None
        self._root: tuple[torch.Tensor, torch.Tensor] | None = None  # the prompt's last output, from observe
        # root position and head-cache pairs, staged in pinned memory (a pageable copy would wait for the GPU)
        self._start = torch.zeros(2, dtype=torch.long, pin_memory=self.runner.cuda_graphs)

    def reset(self):
        self.pairs, self.pending, self._root = 0, None, None

    def observe(self, tokens, hidden, start):
        hidden = self.head.features(hidden)
        self.pairs = min(self.pairs, start)
        if self.pending is not None and self.pending[1] < start:  # keep the pending features before ``start``
            features, first = self.pending
            if first + features.shape[0] < start:
                raise RuntimeError(f"EAGLE features missing for positions {first + features.shape[0]}…{start - 1}")
            hidden, start = torch.cat([features[: start - first], hidden]), first
        self.pending = (hidden, start)
        if start == 0:  # the prompt: the head's own prefill runs now, so it is timed as the drafter's prefill
            self._root = self._consume_pairs(tokens)

    def _consume_pairs(self, tokens: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """Feed the pending pairs; return the last pair's output feature [h] and logits [V]."""
        features, start = self.pending
        self.pending = None
        m, device = features.shape[0], self.runner.device
        ids = tokens[start + 1 : start + 1 + m]
        if m > self.runner.buckets[-1]:  # a prompt: skip the full-vocabulary logits of every row
            pos = torch.arange(start, start + m, device=device)
            mask = causal_mask(start, m, self.runner.total_slots, device)
            hidden = self.head(torch.tensor(ids, device=device)[None], pos, pos, mask, features=features[None])[0]
            logits = self.head.logits(hidden[-1:])
        else:
            logits, hidden = self.runner.tree(ids, range(m), start, np.tri(m, dtype=bool), features=features)
        self.pairs = start + m
        return hidden[-1], logits[-1]

    def propose(self, tokens, room):
        h_root, logits_root = self._consume_pairs(tokens) if self.pending is not None else self._root
        self._root = None
        budget = min(self.tree_size - 1, room)
        if budget < 1:
            return Draft.empty()
        start = self._staged_start(len(tokens) - 1)
        tree, all_tokens, all_scores, all_parents = self._expand(h_root, logits_root, start)
        if budget < tree.shape[1]:  # near the end of the cache: fewer nodes, read on the host (no graph per size)
            tokens, parents, nan = select_tree(all_tokens, all_scores, all_parents, budget).tolist()
            if nan[0]:
                refuse_nan(all_scores.tolist(), all_parents.tolist())
            return Draft(tokens, parents)

        def check(rows):  # the tree's NaN count; the pool is still in the graph's buffers when the verify reads it
            if rows[2][0]:
                refuse_nan(all_scores.tolist(), all_parents.tolist())

        return Draft.from_device(tree, check)  # verified from the device: the host reads it during the verify

    def propose_on_device(self, commit, tokens):
        if commit is None:  # the prompt's last output, from observe
            (h_root, logits_root), self._root = self._root, None
            start = self._staged_start(self.pairs)
        else:  # the kept (feature, next token) pairs; the root sits at the target's new length, as do the pairs
            logits_root, h_root = self.runner.chain_on_device(commit.tokens, commit.count + 1, commit.start,
                                                              features=self.head.features(commit.kept))
            start = commit.scalars[1:].expand(2)
        return self._expand(h_root, logits_root, start)[0]

    def _staged_start(self, root_pos: int) -> torch.Tensor:
        """The expansion's ``start`` (root position, head-cache pairs) from the host, through pinned memory."""
        self._start.numpy()[:] = (root_pos, self.pairs)  # numpy: two torch item writes cost ~10 us each
        return self._start if self.runner.cuda_graphs else self._start.to(self.runner.device)

    def _expand(self, h_root: torch.Tensor, logits_root: torch.Tensor, start: torch.Tensor):
        """The whole tree expansion and selection, one CUDA graph when graphs are on (its inputs are all tensors)."""
        if not self.runner.cuda_graphs:
            return self._expand_tree(h_root, logits_root, start)
        if self._expand_graph is None:
            expand = self._expand_tree
            if self.runner.compiled:  # Inductor fuses the passes' small kernels (masks, norms, top-k bookkeeping)
                expand = torch.compile(expand, fullgraph=True, dynamic=False, mode=self.runner.compile_mode)
            self._expand_graph = GraphedCall(expand, self.runner.pool,
                                             f"EAGLE expansion ({self.depth - 1} passes of {self.topk} rows)",
                                             (self.depth - 1) * forward_bytes(self.runner.model))
        return self._expand_graph(h_root, logits_root, start)

    def _expand_tree(self, h_root: torch.Tensor, logits_root: torch.Tensor, start: torch.Tensor):
        """The draft rows of the ``tree_size - 1`` best candidates (``select_tree``), and every candidate's token,
        cumulative log-prob and parent (-1: the root), from the root's outputs.

        ``start`` holds the root's position and the number of real pairs in the head's cache; the expansion
        passes write their K/V to the ``k·(depth-1)`` slots right after those pairs.
        """
        k, device = self.topk, h_root.device
        root_pos, pairs = start[0], start[1]
        fed = k * (self.depth - 1)
        rows = torch.arange(k, device=device)
        fed_ids = torch.arange(fed, device=device)
        fed_slots = pairs + fed_ids
        child_row = rows[:, None].expand(k, k).flatten()  # the frontier row of each of the k² children
        top_ids, top_scores = top_log_probs(logits_root, k)
        all_tokens, all_scores = self.head.target_ids(top_ids), top_scores
        all_parents = torch.full((k,), -1, device=device)
        frontier = rows  # candidate ids fed in the next pass
        frontier_feat = h_root.expand(k, -1)
        frontier_anc = torch.zeros(k, fed, dtype=torch.bool, device=device)  # fed ancestors, per frontier row
        prefix = torch.arange(self.runner.total_slots, device=device) < pairs
        for level in range(1, self.depth):
            own = (level - 1) * k + rows
            tree = frontier_anc | (fed_ids[None, :] == own[:, None])  # no host scalar: capturable
            mask = prefix.expand(k, -1).clone()
            mask[:, fed_slots] = tree
            hidden = self.head(all_tokens[frontier][None], (root_pos + level - 1).expand(k), fed_slots[own],
                               mask[None, None], features=frontier_feat[None])[0]
            child_ids, child_log_probs = top_log_probs(self.head.logits(hidden), k)
            child_scores = (all_scores[frontier][:, None] + child_log_probs).flatten()
            new_ids = all_scores.numel() + torch.arange(k * k, device=device)
            all_tokens = torch.cat([all_tokens, self.head.target_ids(child_ids.flatten())])
            all_scores = torch.cat([all_scores, child_scores])
            all_parents = torch.cat([all_parents, frontier[child_row]])
            best = child_scores.topk(k).indices
            frontier, frontier_feat, frontier_anc = new_ids[best], hidden[child_row[best]], tree[child_row[best]]
        tree = select_tree(all_tokens, all_scores, all_parents, self.tree_size - 1)
        return tree, all_tokens, all_scores, all_parents


def select_tree(tokens: torch.Tensor, scores: torch.Tensor, parents: torch.Tensor, budget: int) -> torch.Tensor:
    """[3, budget] draft rows of the ``budget`` best candidates of a pool, in pool order: token, parent node (-1: the
    root) and, in every column, the pool's count of NaN scores (``refuse_nan``). ``parents`` are pool indices and
    precede their children. A candidate ranks at most as high as its parent, ties by pool order (rounding can lift a
    near-certain child's cumulative log-prob above its parent's), so every chosen node's parent is chosen. No host
    sync: the verify can be built from these rows on the device."""
    capped = scores
    up = torch.where(parents >= 0, parents, torch.arange(parents.numel(), device=parents.device))
    for _ in range(max(1, parents.numel().bit_length())):  # pointer doubling: each pass reaches twice as high
        capped, up = torch.minimum(capped, capped[up]), up[up]
    keep = torch.sort(capped, descending=True, stable=True).indices[:budget].sort().values
    parent = parents[keep]
    node = torch.searchsorted(keep, parent.clamp(min=0)).clamp(max=budget - 1)  # NaN pools may lack a parent
    nan = torch.isnan(scores).sum().expand(budget)
    return torch.stack([tokens[keep], torch.where(parent >= 0, node, -1), nan])


def refuse_nan(scores: list[float], parents: list[int]) -> None:
    """Raise for a pool with NaN cumulative log-probs: no ranking exists (seen on the H200 at d = 6, session 8)."""
    nan = [i for i, v in enumerate(scores) if v != v]
    depth, up = 1, parents[nan[0]]
    while up >= 0:
        depth, up = depth + 1, parents[up]
    raise FloatingPointError(f"EAGLE draft tree: {len(nan)} of {len(scores)} candidates have NaN cumulative "
                             f"log-probs (first: pool index {nan[0]} at depth {depth}, parent {parents[nan[0]]}): "
                             "the head's forward produced non-finite logits")


def build(conf: EagleConf, ctx: DraftContext, parts: Parts) -> EagleDrafter:
    return EagleDrafter(ctx, parts.head(conf.head, ctx.target.model), conf.topk, conf.depth, conf.tree_size)


register(EagleConf, build)
