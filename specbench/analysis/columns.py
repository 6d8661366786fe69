"""Which runs may fill a cell, per GPU: the paper's GPU beside the paper's value, other GPUs in their own columns.

A manifest names the GPU its paper ran on (option ``gpu``, e.g. ``A100``; ``RTX 3090`` for one table): a cell's
"ours" takes only runs whose ``env.gpu`` contains that name, so a run on another GPU never fills the paper's column.
Each entry of the manifest's ``gpu_columns`` (``{id: h200, label: H200, gpu: H200}``) adds a column with the same
cell measured on that GPU; there the table's ``weights`` and ``acceptance_source`` conditions are dropped, so
shape-only rows (random weights of the real shapes, replayed tau) fill it, with a marker naming what they are: GPU,
shape-only, the source of the replayed tau, for a quantized target the kernel, whose timing does not depend on how
the weights were quantized, and when the run was measured (day and commit). Acceptance and accuracy metrics
(``REAL_ONLY``) take only real weights with real acceptance in every column: a replayed tau is the run's input,
never a measurement.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

REAL_ONLY = ("tau", "alpha", "accuracy", "accuracy_change")
REAL = [("weights", "real"), ("acceptance_source", "real")]
PROVENANCE = ("weights", "acceptance_source")
SIXTEEN_BIT = ("fp16", "bf16", "none", "auto")
SHAPE_ONLY_MARK = "†"


def _gpu(name: str) -> tuple[str, str]:
    return "env.gpu", f"*{name}*"


def paper_column(cell):
    """``cell`` restricted to the paper's GPU (when the manifest names one) and, for acceptance and accuracy, to
    real weights with real acceptance."""
    extra = [_gpu(cell.options["gpu"])] if cell.options.get("gpu") else []
    if cell.metric["metric"] in REAL_ONLY:
        extra += REAL
    return replace(cell, conditions=[*cell.conditions, *extra])


def gpu_column(cell, gpu: str):
    """``cell`` measured on ``gpu``: shape-only rows allowed, except for acceptance and accuracy metrics."""
    kept = [(k, v) for k, v in cell.conditions if k not in PROVENANCE]
    extra = REAL if cell.metric["metric"] in REAL_ONLY else []
    return replace(cell, conditions=[*kept, _gpu(gpu), *extra])


def marker(rows: pd.DataFrame) -> str:
    """What the rows are, when they are not the paper's kind of measurement (empty for real weights, real
    acceptance and a 16-bit or checkpoint target)."""
    parts = []
    first = rows.iloc[0]
    gpu = first.get("env.gpu")
    if "shape_only" in set(rows.get("weights", ())):
        tokens = rows["dataset.max_new_tokens"].dropna() if "dataset.max_new_tokens" in rows else []
        lengths = "/".join(str(n) for n in sorted({int(n) for n in tokens}))
        parts.append(f"{SHAPE_ONLY_MARK} {gpu + ', ' if isinstance(gpu, str) else ''}shape-only"
                     + (f", {lengths} new tokens per prompt" if lengths else ""))
    if "replay" in set(rows.get("acceptance_source", ())):
        sources = sorted({s for s in rows.get("timing.replay_source", pd.Series(dtype=object)).dropna()})
        parts.append("τ replayed from " + (" | ".join(sources) if sources else "the experiment's timing.replay_tau"))
        short = replay_shortfall(rows)
        if short:
            parts.append(short)
    if first.get("drafter") == "ngram" and first.get("drafter.on_miss") == "repeat":
        parts.append("n-gram drafts gamma tokens every step (drafter.on_miss=repeat: random tokens never recur)")
    scheme = first.get("quant.scheme")
    if isinstance(scheme, str) and scheme not in SIXTEEN_BIT:
        if first.get("weights") == "shape_only":
            chosen = first.get("quant_backend")  # what quant.backend (e.g. auto) resolved to, with its kernel
            kernel = (f"{chosen}: {first.get('quant_kernel')}" if isinstance(chosen, str) else first.get("quant.backend"))
            parts.append(f"{scheme} kernel {kernel}: timing does not depend on how the weights were quantized")
        else:
            parts.append(f"{scheme} quantized by RTN at load time, not the paper's checkpoint")
    if parts:
        parts.append(measured(rows))
    return "; ".join(part for part in parts if part)


def measured(rows: pd.DataFrame) -> str:
    """When the rows' runs started (UTC days) and the commit they ran: a timing measured before a kernel change says
    so (empty where the result files lack ``env.date``)."""
    days = sorted({d[:10] for d in rows.get("env.date", pd.Series(dtype=object)).dropna() if isinstance(d, str)})
    if not days:
        return ""
    shas = sorted({s[:7] for s in rows.get("env.git_sha", pd.Series(dtype=object)).dropna() if isinstance(s, str)})
    when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    return f"measured {when}" + (f" at {shas[0]}" if len(shas) == 1 else "")


def imposed_tau(rows: pd.DataFrame) -> pd.Series:
    """The tau each replayed row was given, as ``decoding.replay.per_task_replay`` chose it: its category's or its
    task's ``timing.replay_tau_by_task`` entry, else ``timing.replay_tau`` (NaN where nothing was imposed)."""
    from specbench.datasets.synthetic import task_of

    prefix = "timing.replay_tau_by_task."
    by_task = {c[len(prefix):]: c for c in rows.columns if c.startswith(prefix)}

    def one(row) -> float:
        category = row.get("category")
        task = task_of(row.get("dataset.name"), category) if isinstance(category, str) else None
        tau = next((row[by_task[key]] for key in (category, task) if key in by_task and pd.notna(row[by_task[key]])),
                   row.get("timing.replay_tau"))
        return float(tau) if pd.notna(tau) else float("nan")

    return pd.Series([one(row) for _, row in rows.iterrows()], index=rows.index, dtype=float)


def replay_shortfall(rows: pd.DataFrame, tolerance: float = 0.03) -> str:
    """A note when replayed rows reached a mean tau more than ``tolerance`` below the imposed one (the draft was
    shallower than the imposed accept length on some steps), else empty."""
    if "tau" not in rows:
        return ""
    wanted = imposed_tau(rows)
    if wanted.isna().all():
        return ""
    achieved, target = rows["tau"].astype(float).mean(), wanted.mean()
    if achieved >= (1 - tolerance) * target:
        return ""
    return (f"achieved τ {achieved:.2f} of the imposed {target:.2f} (drafts shallower than the imposed accept length "
            "on some steps): the speedup is that of the achieved τ")


def why_empty(cell, pool, gpu: str | None, note: str) -> str:
    """The reason a cell of the paper's column (``gpu`` None) or of a GPU column is empty."""
    replayed_only = cell.metric["metric"] in REAL_ONLY and len(pool.select(
        [c for c in cell.conditions if c not in REAL], cell.anys))
    if replayed_only:
        return f"needs real weights ({cell.metric['metric']} of a shape-only run is its replayed input); {note}"
    if gpu is None and cell.options.get("gpu"):
        return f"needs an {cell.options['gpu']} (the paper's GPU); {note}"
    return note


def gpu_columns(manifest) -> list[dict]:
    return list((manifest.data.get("conventions") or {}).get("gpu_columns") or [])
