"""Prompt-lookup (n-gram) drafting, as in vLLM's V0 ngram proposer that Quasar ran.

For n from ``max_n`` down to ``min_n``: find an earlier occurrence of the last n tokens and propose the
``num_tokens`` tokens that followed it. vLLM takes the earliest occurrence and, when the continuation runs
past the end of the sequence, repeats the last token (``pad="clamp"``); ``match="latest"`` and
``pad="truncate"`` are the common alternatives. Proposals are deterministic, so verification treats them
as point masses. Where no n-gram recurs there is no draft (a plain decode step, as vLLM), unless
``on_miss="repeat"``: then the last token, ``num_tokens`` times. That is for shape-only runs with replayed
acceptance, whose random tokens almost never recur: each step then verifies ``num_tokens + 1`` tokens and accepts
what the replay imposes, as a real run does on the steps whose lookup hits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from specbench.config import require
from specbench.decoding.draft import Draft
from specbench.decoding.drafter import DraftContext, Drafter
from specbench.decoding.graphs import GraphedCall
from specbench.drafters.registry import DrafterConf, register

MATCHES = ("earliest", "latest")
PADS = ("clamp", "truncate")
ON_MISS = (None, "repeat")


def lookup(tokens: list[int], min_n: int, max_n: int, num_tokens: int, match: str = "earliest",
           pad: str = "clamp") -> list[int]:
    """The n-gram proposal for ``tokens`` (empty when no n-gram of the allowed sizes recurs).

    The search is vectorised (every window compared at once): it runs on the host between GPU steps, so a
    Python scan would leave the GPU idle for O(length) interpreter time each step.
    """
    seq = np.asarray(tokens, dtype=np.int64)
    size = len(seq)
    for n in range(min(max_n, size - 1), min_n - 1, -1):
        # windows starting at 0 … size-n-1 (each followed by at least one token) that equal the last n tokens
        same = seq[: size - n] == seq[size - n]
        for j in range(1, n):
            same &= seq[j : size - n + j] == seq[size - n + j]
        hits = np.flatnonzero(same)
        if hits.size:
            begin = int(hits[0] if match == "earliest" else hits[-1]) + n
            if pad == "clamp":
                return seq[np.minimum(np.arange(begin, begin + num_tokens), size - 1)].tolist()
            return seq[begin : begin + num_tokens].tolist()
    return []


@dataclass
class NgramConf(DrafterConf):
    """Quasar's setting: K=(min_n, max_n)=(1, 3), gamma=num_tokens=5, vLLM V0's earliest match and clamp padding."""

    name: str = "ngram"
    min_n: int = 1
    max_n: int = 3
    num_tokens: int = 5
    match: str = "earliest"
    pad: str = "clamp"
    on_miss: Optional[str] = None  # no n-gram recurs: None = no draft (vLLM); "repeat" = the last token num_tokens x

    def check(self, prefix="drafter"):
        require(self.min_n >= 1, f"{prefix}.min_n", self.min_n, "an integer >= 1")
        require(self.max_n >= self.min_n, f"{prefix}.max_n", self.max_n, f"an integer >= min_n ({self.min_n})")
        require(self.num_tokens >= 1, f"{prefix}.num_tokens", self.num_tokens, "an integer >= 1")
        require(self.match in MATCHES, f"{prefix}.match", self.match, f"one of {MATCHES}")
        require(self.pad in PADS, f"{prefix}.pad", self.pad, f"one of {PADS}")
        require(self.on_miss in ON_MISS, f"{prefix}.on_miss", self.on_miss,
                "null (no draft, as vLLM) or 'repeat' (shape-only replay runs)")

    def step_shape(self):
        return int(self.num_tokens) + 1, ("sequence",), 0, 1  # a lookup, no draft forward


def lookup_on_device(history: torch.Tensor, length: torch.Tensor, min_n: int, max_n: int, num_tokens: int,
                     match: str = "earliest") -> torch.Tensor:
    """``lookup`` with clamp padding of the first ``length`` (a device scalar) tokens of ``history``, computed on
    their device without a host sync; where no n-gram recurs, the last token ``num_tokens`` times (``on_miss=
    "repeat"``). Returns the proposal [num_tokens]."""
    size = history.numel()
    start = torch.arange(size, device=history.device)
    last = (length - 1).view(1)  # index tensors of one element: a 0-dim one would be read on the host
    proposal = history.index_select(0, last).expand(num_tokens)
    for n in range(min_n, max_n + 1):  # a longer n-gram that recurs replaces a shorter one's proposal
        # windows starting at 0 … length-n-1 (each followed by at least one token) that equal the last n tokens
        same = (start < length - n) & (n <= last)
        for j in range(n):
            same &= history.roll(-j) == history.index_select(0, (last - n + 1 + j).clamp(min=0))
        order = -start if match == "earliest" else start
        begin = torch.where(same, order, -2 * size).argmax() + n
        found = history[torch.minimum(begin + torch.arange(num_tokens, device=history.device), last)]
        proposal = torch.where(same.any(), found, proposal)
    return proposal


class NgramDrafter(Drafter):
    name = "ngram"
    reads_hidden = False

    def __init__(self, ctx: DraftContext, conf: NgramConf):
        super().__init__(ctx)
        self.settings = dict(min_n=conf.min_n, max_n=conf.max_n, num_tokens=conf.num_tokens, match=conf.match,
                             pad=conf.pad)
        self.on_miss = conf.on_miss
        # on the device: proposals of a fixed size only (shape-only runs: every step verifies num_tokens + 1)
        self.drafts_on_device = conf.on_miss == "repeat" and conf.pad == "clamp"
        self.device_depth, self.device_tree_size = conf.num_tokens, conf.num_tokens + 1
        self._history: torch.Tensor | None = None  # the committed tokens, root included, on the target's device
        self._lookup: GraphedCall | None = None
        self._search = lookup_on_device

    def propose_on_device(self, commit, tokens):
        """The lookup over the committed tokens, kept on the device: ``commit`` appends its path and bonus token."""
        runner, device = self.ctx.target.runner, self.ctx.target.device
        if self._history is None:  # one buffer for every generation: the lookup's graph writes into it
            self._history = torch.zeros(runner.max_seq_len + self.device_depth + 2, dtype=torch.long, device=device)
            # its own memory pool: the acceptance reads its chain after the verify, whose intermediates share the
            # target's pool
            self._lookup = GraphedCall(self._propose_after, None, f"n-gram lookup ({self.device_depth})")
            if runner.compiled and runner.cuda_graphs:  # Inductor fuses the search's few dozen small kernels
                self._search = torch.compile(lookup_on_device, fullgraph=True, dynamic=False, mode=runner.compile_mode)
        run = self._lookup if runner.cuda_graphs else self._lookup.fn
        if commit is None:  # the prompt and the first token, staged once per generation
            size = len(tokens)
            self._history[:size] = torch.tensor(tokens)
            length = torch.full((), size, device=device)
            return run(length, self._history[size - 1 : size].expand(self.device_depth + 1), length - 1)
        return run(commit.scalars[1] + 1, commit.tokens, commit.start + 1)

    def _propose_after(self, length, tokens, at):
        """Write ``tokens`` into the history at ``at`` (the commit's path and bonus; what lands past ``length`` is
        overwritten later), then draft the chain [3, num_tokens] (tokens, parents, a zero NaN count) after the
        history's first ``length`` tokens."""
        history = self._history
        history.index_copy_(0, at + torch.arange(tokens.numel(), device=history.device), tokens)
        s = self.settings
        proposal = self._search(history, length, s["min_n"], s["max_n"], s["num_tokens"], s["match"])
        chain = torch.arange(-1, s["num_tokens"] - 1, device=history.device)
        return torch.stack([proposal, chain, torch.zeros_like(chain)])

    def propose(self, tokens, room):
        s = self.settings
        size = min(s["num_tokens"], room)
        proposal = lookup(tokens, s["min_n"], s["max_n"], size, s["match"], s["pad"])
        if not proposal and self.on_miss == "repeat":
            proposal = [tokens[-1]] * size
        return Draft.chain(proposal)


register(NgramConf, lambda conf, ctx, parts: NgramDrafter(ctx, conf))
