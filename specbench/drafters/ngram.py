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

from specbench.config import require
from specbench.decoding.draft import Draft
from specbench.decoding.drafter import DraftContext, Drafter
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


class NgramDrafter(Drafter):
    name = "ngram"
    reads_hidden = False

    def __init__(self, ctx: DraftContext, conf: NgramConf):
        super().__init__(ctx)
        self.settings = dict(min_n=conf.min_n, max_n=conf.max_n, num_tokens=conf.num_tokens, match=conf.match,
                             pad=conf.pad)
        self.on_miss = conf.on_miss

    def propose(self, tokens, room):
        s = self.settings
        size = min(s["num_tokens"], room)
        proposal = lookup(tokens, s["min_n"], s["max_n"], size, s["match"], s["pad"])
        if not proposal and self.on_miss == "repeat":
            proposal = [tokens[-1]] * size
        return Draft.chain(proposal)


register(NgramConf, lambda conf, ctx, parts: NgramDrafter(ctx, conf))
