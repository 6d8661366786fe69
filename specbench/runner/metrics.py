"""What one generation contributes to the result files: a row of metrics and a row per step.

Conventions (recorded in column names):
- ``new_tokens`` counts every generated token, the prefill's first token included (SpecMQuant's count).
- ``tokens_per_s_decode`` excludes target and drafter prefill (SpecMQuant); ``tokens_per_s_e2e`` includes
  them (Quasar).
- ``tau`` = committed tokens per verify step, bonus included (AR = 1.00); ``alpha`` = accepted draft tokens /
  drafted tokens.
- ``tokens_per_s_eq1`` is Eq. (1)'s predicted speed from the generation's own phase times (``analysis/eq1.py``),
  beside the measured ``tokens_per_s_decode``.
"""

from __future__ import annotations

import json
import math

from specbench.analysis.eq1 import tokens_per_s
from specbench.decoding.generate import Generation
from specbench.decoding.phases import PHASES


def generation_row(gen: Generation) -> dict:
    accepted = sum(a - 1 for a in gen.accept_lengths)
    drafted = sum(gen.drafted)
    phase_totals = {p: 0.0 for p in PHASES}
    for phases in gen.phase_ms.values():
        for name, ms in phases.items():
            phase_totals[name] += ms
    total_s = gen.prefill_s + gen.decode_s
    steps = gen.steps or math.nan
    predicted = tokens_per_s(gen.tau, phase_totals["draft"] / steps, phase_totals["verify"] / steps)
    return {
        "prompt_tokens": gen.prompt_len,
        "new_tokens": len(gen.tokens),
        "steps": gen.steps,
        "tau": gen.tau,
        "accepted_tokens": accepted,
        "drafted_tokens": drafted,
        "alpha": accepted / drafted if drafted else float("nan"),
        "accept_lengths": json.dumps(gen.accept_lengths),
        "stop_reason": gen.stop_reason,
        "decode_loop": gen.decode_loop,
        "reverified_steps": gen.reverified_steps,
        "prefill_s": gen.prefill_s,
        "decode_s": gen.decode_s,
        "total_s": total_s,
        "tokens_per_s_decode": len(gen.tokens) / gen.decode_s if gen.decode_s > 0 else float("nan"),
        "tokens_per_s_e2e": len(gen.tokens) / total_s if total_s > 0 else float("nan"),
        "tokens_per_s_eq1": predicted,
        **{f"{name}_ms": ms for name, ms in phase_totals.items()},
    }


def step_rows(gen: Generation) -> list[dict]:
    rows = []
    for step, (length, drafted, depth) in enumerate(zip(gen.accept_lengths, gen.drafted, gen.draft_depths)):
        phases = gen.phase_ms.get(step, {})
        rows.append({"step": step, "accept_length": length, "drafted": drafted, "draft_depth": depth,
                     **{f"{p}_ms": phases.get(p, 0.0) for p in ("draft", "verify", "accept", "sample")}})
    return rows
