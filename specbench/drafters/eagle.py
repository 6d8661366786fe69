"""EAGLE-2 dynamic-tree drafting with an EAGLE head.

Each step the head first consumes the (feature, next token) pairs the target just committed; its last
output predicts the root's feature and, through the LM head, the root's children. Then ``depth - 1`` more
passes expand the tree: every pass feeds the ``topk`` best frontier nodes, each of which proposes its
``topk`` best children, and the ``topk`` best of those k² children (by cumulative log-probability) form the
next frontier. The candidate pool is k + (depth-1)·k²; the ``tree_size - 1`` candidates with the best
cumulative log-probability are verified (``tree_size`` counts the root, as in SpecMQuant's flags). Top-k
proposals are deterministic, so sampling verification treats them as point masses.
"""

from __future__ import annotations

import torch

from specbench.decoding.draft import Draft
from specbench.decoding.forward import ForwardRunner
from specbench.drafters.base import DraftContext, Drafter, register
from specbench.drafters.eagle_head import EagleHead
from specbench.model.kv_cache import causal_mask


@register("eagle")
class EagleDrafter(Drafter):
    def __init__(self, ctx: DraftContext, head: EagleHead, topk: int = 10, depth: int = 6, tree_size: int = 60):
        super().__init__(ctx)
        limit = ctx.target.runner.buckets[-1]
        if not 2 <= tree_size <= limit:
            raise ValueError(f"eagle.tree_size={tree_size} is outside what the verifier supports (2…{limit} "
                             "tokens including the root); lower eagle.tree_size")
        if topk < 1 or depth < 1:
            raise ValueError("eagle.topk and eagle.depth must be >= 1")
        self.head, self.topk, self.depth, self.tree_size = head, topk, depth, tree_size
        target_runner = ctx.target.runner
        self.runner = ForwardRunner(head, target_runner.max_seq_len + depth * topk,
                                    cuda_graphs=target_runner.cuda_graphs, buckets=target_runner.buckets)
        self.pairs = 0  # (feature, next token) pairs in the head's cache: positions 0 … pairs-1
        self.pending: tuple[torch.Tensor, int] | None = None

    def reset(self):
        self.pairs, self.pending = 0, None

    def observe(self, tokens, hidden, start):
        self.pairs = min(self.pairs, start)
        if self.pending is not None and self.pending[1] < start:  # keep the pending features before ``start``
            features, first = self.pending
            if first + features.shape[0] < start:
                raise RuntimeError(f"EAGLE features missing for positions {first + features.shape[0]}…{start - 1}")
            hidden, start = torch.cat([features[: start - first], hidden]), first
        self.pending = (hidden, start)

    def _consume_pairs(self, tokens: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """Feed the pending pairs; return the last pair's output feature [h] and log-probs [V]."""
        features, start = self.pending
        self.pending = None
        m, device = features.shape[0], self.runner.device
        ids = torch.tensor(tokens[start + 1 : start + 1 + m], device=device)
        pos = torch.arange(start, start + m, device=device)
        mask = causal_mask(start, m, self.runner.total_slots, device)
        if m > self.runner.buckets[-1]:  # a prompt: skip the full-vocabulary logits of every row
            hidden = self.head(ids[None], pos, pos, mask, features=features[None])[0]
            logits = self.head.logits(hidden[-1:])
        else:
            logits, hidden = self.runner(ids, pos, pos, mask, features=features)
        self.pairs = start + m
        return hidden[-1], torch.log_softmax(logits[-1].float(), -1)

    def propose(self, tokens, room):
        h_root, logp_root = self._consume_pairs(tokens)
        budget = min(self.tree_size - 1, room)
        if budget < 1:
            return Draft.empty()
        k, device, root_pos = self.topk, self.runner.device, len(tokens) - 1
        top = logp_root.topk(k)
        all_tokens, all_scores = top.indices, top.values  # every candidate's token and cumulative log-prob
        parent_of = [-1] * k
        frontier = torch.arange(k, device=device)  # candidates fed in the next pass
        frontier_feat = h_root.expand(k, -1)
        anc_slots: dict[int, list[int]] = {}  # fed candidate -> head-cache slots of itself and its ancestors
        next_slot, n_cand = self.pairs, k
        for level in range(1, self.depth):
            f_ids = frontier.tolist()
            slots = list(range(next_slot, next_slot + len(f_ids)))
            mask = torch.zeros(len(f_ids), self.runner.total_slots, dtype=torch.bool)
            mask[:, : self.pairs] = True
            for row, (c, s) in enumerate(zip(f_ids, slots)):
                parent = parent_of[c]
                anc_slots[c] = (anc_slots[parent] if parent >= 0 else []) + [s]
                mask[row, anc_slots[c]] = True
            next_slot += len(f_ids)
            logits, hidden = self.runner(
                all_tokens[frontier], torch.full((len(f_ids),), root_pos + level - 1, device=device),
                torch.tensor(slots, device=device), mask.to(device)[None, None], features=frontier_feat,
            )
            child = torch.log_softmax(logits.float(), -1).topk(k)
            child_scores = (all_scores[frontier][:, None] + child.values).flatten()
            child_parent = frontier[:, None].expand(-1, k).flatten()
            child_row = torch.arange(len(f_ids), device=device)[:, None].expand(-1, k).flatten()
            new_ids = torch.arange(n_cand, n_cand + child_scores.numel(), device=device)
            all_tokens = torch.cat([all_tokens, child.indices.flatten()])
            all_scores = torch.cat([all_scores, child_scores])
            parent_of += child_parent.tolist()
            n_cand += child_scores.numel()
            best = child_scores.topk(min(k, child_scores.numel())).indices
            frontier, frontier_feat = new_ids[best], hidden[child_row[best]]
        keep = self._select(all_scores, budget)
        return self._to_draft(keep, all_tokens, parent_of)

    @staticmethod
    def _select(scores: torch.Tensor, budget: int) -> list[int]:
        """The best ``budget`` candidates; a parent always outranks its children (ties go to lower ids)."""
        s = scores.tolist()
        order = sorted(range(len(s)), key=lambda i: (-s[i], i))
        return sorted(order[:budget])

    @staticmethod
    def _to_draft(keep: list[int], all_tokens: torch.Tensor, parent_of: list[int]) -> Draft:
        index = {c: i for i, c in enumerate(keep)}
        toks = all_tokens[keep].tolist()
        parents = [index[parent_of[c]] if parent_of[c] >= 0 else -1 for c in keep]
        return Draft(toks, parents)

    def describe(self):
        return {"drafter": self.name, "eagle_topk": self.topk, "eagle_depth": self.depth,
                "eagle_tree_size": self.tree_size}
