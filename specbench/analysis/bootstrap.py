"""Bootstrap over questions (and repeats), as weight matrices.

A replicate is a vector of weights over the measured units (question x repeat); every statistic is a function
of weighted sums, so one ``(B + 1) x U`` matrix evaluates the point estimate (row 0: every unit once) and B
replicates at once. Questions are resampled with replacement within each stratum (dataset); where a question
has several repeats, each drawn copy of the question draws its repeats again with replacement. Ratios between
two runs use the *same* question draws for both (paired), so shared per-question difficulty cancels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

N_BOOT = 2000
LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a bootstrap percentile interval; ``ci`` says what the interval is."""

    value: float
    lo: float
    hi: float
    n: int = 0  # questions behind it
    ci: str = "bootstrap"
    note: str = ""

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2


def interval(replicates: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The percentile interval of the finite replicates (nan, nan when there are none)."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return float("nan"), float("nan")
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(finite, [tail, 100 - tail])
    return float(lo), float(hi)


def question_weights(strata: Sequence, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_boot + 1) x Q`` draw counts: row 0 all ones; each later row resamples every stratum's questions."""
    strata = np.asarray(strata, dtype=object)
    weights = np.ones((n_boot + 1, len(strata)))
    for stratum in dict.fromkeys(strata.tolist()):
        idx = np.flatnonzero(strata == stratum)
        weights[1:, idx] = rng.multinomial(len(idx), np.full(len(idx), 1 / len(idx)), size=n_boot)
    return weights


def unit_weights(qw: np.ndarray, unit_question: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Expand question draw counts to the units (question, repeat); each question's units sum to its count.

    ``unit_question[u]`` is the column of ``qw`` that unit ``u`` belongs to. Row 0 (the point estimate)
    gives a question's ``r`` repeats ``1/r`` each; later rows draw ``count x r`` repeats with replacement.
    """
    out = np.zeros((qw.shape[0], len(unit_question)))
    for q in np.unique(unit_question):
        units = np.flatnonzero(unit_question == q)
        r = len(units)
        out[0, units] = 1 / r
        if r == 1:
            out[1:, units[0]] = qw[1:, q]
        else:
            draws = rng.multinomial((qw[1:, q] * r).astype(int), np.full(r, 1 / r))
            out[1:, units] = draws / r
    return out


def estimate(replicates: np.ndarray, n: int = 0, level: float = LEVEL, note: str = "") -> Estimate:
    """Row 0 of ``replicates`` is the point estimate; the rest give the interval."""
    lo, hi = interval(replicates[1:], level)
    return Estimate(float(replicates[0]), lo, hi, n, note=note)


def bootstrap(values: Sequence[float], statistic: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
              n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL,
              weights: np.ndarray | None = None) -> Estimate:
    """One-sample bootstrap of ``statistic(weights, values)`` (default: the weighted mean).

    ``weights`` replaces the random draws with given rows (each a resample as draw counts), for checks.
    """
    x = np.asarray(values, dtype=float)
    stat = statistic or (lambda w, v: w @ v / w.sum(axis=1))
    if weights is None:
        weights = question_weights(np.zeros(len(x)), n_boot, np.random.default_rng(seed))
    else:
        weights = np.vstack([np.ones(len(x)), np.asarray(weights, dtype=float)])
    return estimate(stat(weights, x), n=len(x), level=level)
