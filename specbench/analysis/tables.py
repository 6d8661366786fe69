"""Write every manifest table as Markdown and LaTeX: the paper's value, ours with its interval, the difference.

Per table ``<paper>_<table>.md`` / ``.tex`` hold (1) a grid shaped like the paper's table, each cell
``paper -> ours +- half-width (delta)``, (2) the long form, one line per cell with the interval, the number of
questions and why a cell is empty, and (3) for speedup cells, both denominators with prefill in and out, macro and
micro. ``README.md`` indexes them; ``runs.md`` / ``runs.csv`` list every run found with its statistics.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from specbench.analysis.cells import cell_stats
from specbench.analysis.columns import REAL_ONLY, SHAPE_ONLY_MARK, gpu_columns
from specbench.analysis.manifest import Manifest, fill

UNITS = {"speedup": "×", "added_speedup": "×", "predicted_speedup": "×"}
DECIMALS = {"tok_s": 1, "tok_s_eq1": 1, "drafter_prefill_ms": 1, "draft_ms_per_step": 1, "draft_ms_per_len": 1,
            "accuracy": 1, "accuracy_change": 1}


def number(value: float, kind: str, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:{'+' if signed else ''}.{DECIMALS.get(kind, 2)}f}"


def ours(cell: pd.Series, column: str = "value") -> str:
    """``1.07 ± 0.03×`` (half the interval), then Eq. (1)'s prediction and its source where the cell has one
    (``1.07 ± 0.03× (Eq. (1) 1.12× from probes)``), or ``not run``; ``column`` names a GPU column's value instead
    of the paper column's."""
    value = cell[column] if column in cell.index else math.nan
    if not math.isfinite(value):
        return "not run"
    lo, hi = (cell.lo, cell.hi) if column == "value" else (cell[f"{column}_lo"], cell[f"{column}_hi"])
    spread = (hi - lo) / 2
    text = number(value, cell.kind)
    if math.isfinite(spread):
        text += f" ± {number(spread, cell.kind)}"
    text += UNITS.get(cell.kind, "")
    key = "predicted" if column == "value" else f"{column}_predicted"
    prediction = cell.get(key, math.nan)
    if math.isfinite(prediction):
        text += f" (Eq. (1) {number(prediction, cell.kind)}{UNITS.get(cell.kind, '')} from {cell[f'{key}_source']})"
    return text


def on_gpu(cell: pd.Series, gpu: dict) -> str:
    """A GPU column's cell: ``H200†: 1.07 ± 0.03× (0.95 of paper)``, † marking shape-only rows."""
    mark = SHAPE_ONLY_MARK if str(cell[f"{gpu['id']}_note"]).startswith(SHAPE_ONLY_MARK) else ""
    ratio = cell[f"{gpu['id']}_ratio"]
    return (f"{gpu['label']}{mark}: {ours(cell, gpu['id'])}"
            + (f" ({number(ratio, 'ratio')} of paper)" if math.isfinite(ratio) else ""))


def delta(cell: pd.Series) -> str:
    if not math.isfinite(cell.delta):
        return "—"
    mark = {"yes": " ✓", "no": " ✗"}.get(cell.match, "")
    return number(cell.delta, cell.kind, signed=True) + mark


def grid(cells: pd.DataFrame, gpus: list[dict] = ()) -> tuple[list[str], list[list[str]]]:
    """The paper-shaped table: a line per row x metric, a column per table column; each cell ``paper → ours``,
    then the same cell on each GPU column."""
    columns = list(dict.fromkeys(cells.column_label))
    header = ["", "metric", *columns]
    lines = []
    for (_, _), group in cells.groupby(["row", "metric"], sort=False):
        first = group.iloc[0]
        texts = {}
        for _, c in group.iterrows():
            paper = f"{c.paper} → {ours(c)}" + (f" (Δ {delta(c)})" if math.isfinite(c.delta) else "")
            texts[c.column_label] = " · ".join([paper, *[on_gpu(c, g) for g in gpus]])
        lines.append([first.row_label, first.metric_label, *[texts[c] for c in columns]])
    return header, lines


LONG_HEADER = ["row", "column", "metric", "paper", "ours", "95% CI", "Δ", "n", "note"]


def long_header(gpus: list[dict] = ()) -> list[str]:
    return [*LONG_HEADER, *[h for g in gpus for h in (g["label"], f"{g['label']} / paper", f"{g['label']} note")]]


def long_form(cells: pd.DataFrame, gpus: list[dict] = ()) -> list[list[str]]:
    """One line per cell: the paper column, then value, ratio to the paper and note of each GPU column."""
    out = []
    for _, c in cells.iterrows():
        ci = f"[{number(c.lo, c.kind)}, {number(c.hi, c.kind)}]" if c.status == "filled" else "—"
        if c.status == "filled" and c.ci != "bootstrap":
            ci += f" ({c.ci})"
        line = [c.row_label, c.column_label, c.metric_label, c.paper, ours(c), ci, delta(c),
                str(c.n) if c.n else "—", c.note or "—"]
        for g in gpus:
            line += [ours(c, g["id"]), number(c[f"{g['id']}_ratio"], "ratio"), c[f"{g['id']}_note"] or "—"]
        out.append(line)
    return out


def variant_rows(cells: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    names = [c for c in cells.columns if c.startswith("variant:")]
    out = []
    for _, c in cells.iterrows():
        if c.status != "filled" or c.kind != "speedup":
            continue
        texts = []
        for name in names:
            v = c[name]
            texts.append(v if isinstance(v, str) else "—" if not isinstance(v, tuple)
                         else f"{number(v[0], 'speedup')} [{number(v[1], 'speedup')}, {number(v[2], 'speedup')}]")
        out.append([c.row_label, c.column_label, c.metric_label, *texts])
    return ["row", "column", "metric", *[n.removeprefix("variant:") for n in names]], out


def markdown(header: list[str], lines: list[list[str]]) -> str:
    def esc(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    rows = [header, ["---"] * len(header), *lines]
    return "\n".join("| " + " | ".join(esc(t) for t in row) + " |" for row in rows) + "\n"


LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
         "}": r"\}", "~": r"$\sim$", "^": r"\^{}", "×": r"$\times$", "±": r"$\pm$", "→": r"$\to$",
         "Δ": r"$\Delta$", "†": r"$\dagger$", "·": r"$\cdot$",
         "τ": r"$\tau$", "≈": r"$\approx$", "—": "--", "✓": r"$\checkmark$", "✗": r"$\times$", "<": r"$<$",
         ">": r"$>$", "–": "--"}


def latex_escape(text: str) -> str:
    return "".join(LATEX.get(ch, ch) for ch in str(text))


def latex(header: list[str], lines: list[list[str]], caption: str) -> str:
    spec = "l" * len(header)
    body = [" & ".join(latex_escape(t) for t in row) + r" \\" for row in lines]
    return "\n".join([r"\begin{table}[t]", r"\centering\scriptsize", rf"\caption{{{latex_escape(caption)}}}",
                      rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
                      " & ".join(latex_escape(h) for h in header) + r" \\", r"\midrule", *body,
                      r"\bottomrule", r"\end{tabular}", r"\end{table}", ""])


def _counts(cells: pd.DataFrame, gpus: list[dict]) -> str:
    """How many cells are filled in the paper's column and, of the timing cells (every metric but tau, alpha and
    accuracy, which need real weights), in each GPU column."""
    filled = int((cells.status == "filled").sum())
    matched = int((cells.match == "yes").sum())
    compared = int(cells.match.isin(["yes", "no"]).sum())
    text = (f"{len(cells)} cells: {filled} filled, {len(cells) - filled} not run; "
            f"{int(cells.published.sum())} with a paper value")
    timing = ~cells.kind.isin(REAL_ONLY)
    for gpu in gpus:
        text += (f"; {gpu.get('label', gpu['id'])} column: {int(cells.loc[timing, gpu['id']].notna().sum())} of "
                 f"{int(timing.sum())} timing cells filled")
    return text + (f"; {matched}/{compared} within tolerance" if compared else "")


def write_table(manifest: Manifest, table: dict, cells: pd.DataFrame, out: Path) -> list[Path]:
    stem = out / f"{manifest.id}_{table['id']}"
    gpus = gpu_columns(manifest)
    head, lines = grid(cells, gpus)
    vhead, vlines = variant_rows(cells)
    meta = [f"# {table['title']}", "", f"Paper: {manifest.data['title']} (arXiv {manifest.data.get('arxiv')}); "
            f"values from {manifest.data.get('spec')}.", "",
            f"Runs: `python -m specbench -m {table['experiment']}`" if table.get("experiment") else
            "Runs: no Hydra experiment (see the notes).", "", _counts(cells, gpus), ""]
    meta += [f"- {n}" for n in table.get("notes", [])] + [""]
    long = markdown(long_header(gpus), long_form(cells, gpus))
    md = "\n".join(meta) + "\n## Table\n\n" + markdown(head, lines) + "\n## Cells\n\n" + long
    if vlines:
        md += ("\n## Speedup denominators\n\nbaseline / prefill / average; value [95% CI].\n\n"
               + markdown(vhead, vlines))
    tex = latex(head, lines, table["title"]) + "\n" + latex(long_header(gpus), long_form(cells, gpus),
                                                             table["title"] + " (cells)")
    stem.with_suffix(".md").write_text(md)
    stem.with_suffix(".tex").write_text(tex)
    return [stem.with_suffix(".md"), stem.with_suffix(".tex")]


RUN_VIEW = [("run", None), ("model", "model.source"), ("weights", "weights"), ("quant", "quant.scheme"),
            ("drafter", "drafter"), ("dataset", "dataset.name"), ("T", "runtime.temperature"), ("device", None),
            ("n", "n_questions"), ("acceptance", "acceptance_source"), ("measured (UTC)", "env.date"),
            ("code", "env.git_sha")]
REPLAYED = ("tau", "alpha")  # statistics a replayed run imposes instead of measuring: shown without an interval
RUN_STATS = [("tok/s", "tok_s"), ("tok/s Eq. (1)", "tok_s_eq1"), ("tok/s e2e", "tok_s_e2e"), ("τ", "tau"),
             ("α", "alpha"), ("speedup", "speedup"), ("speedup e2e", "speedup_e2e"),
             ("speedup vs 16-bit", "speedup16"), ("Eq. (1)", "predicted_speedup"), ("T_v/T_t", "tv_over_tt")]


def _provenance(run: pd.Series) -> tuple[str, str]:
    """When a run started (``env.date``, to the minute) and the commit it ran (``env.git_sha``, abbreviated), so
    that a reader sees which rows predate a kernel change; "—" where a result file lacks them."""
    date, sha = run.get("env.date"), run.get("env.git_sha")
    return (date[:16].replace("T", " ") if isinstance(date, str) and date else "—",
            sha[:7] if isinstance(sha, str) and sha else "—")


def runs_markdown(stats: pd.DataFrame) -> str:
    lines = []
    for _, r in stats.iterrows():
        settings = ",".join(f"{k.removeprefix('drafter.')}={canon_text(r[k])}" for k in stats.columns
                            if k.startswith("drafter.") and k != "drafter.name" and ".model." not in k
                            and ".quant." not in k and not pd.isna(r[k]))
        device = r.get("env.gpu") if isinstance(r.get("env.gpu"), str) else r.get("runtime.device")
        replayed = r.get("acceptance_source") == "replay"
        source = r.get("timing.replay_source")
        acceptance = f"replay ({source})" if replayed and isinstance(source, str) else r.get("acceptance_source")
        ident = [r["config_hash"], r["model.source"], r.get("weights"), r["quant.scheme"],
                 f"{r['drafter']} {settings}".strip(), r["dataset.name"], f"{r['runtime.temperature']:g}", device,
                 str(int(r.get("n_questions", 0) or 0)), acceptance, *_provenance(r)]
        values = []
        for _, key in RUN_STATS:
            kind = "speedup" if "speedup" in key else key
            cell = number(r[key], kind)
            if replayed and key in REPLAYED:
                cell += " (replayed)" if math.isfinite(r[key]) else ""
            elif math.isfinite(r.get(f"{key}_lo", math.nan)):
                cell += f" [{number(r[f'{key}_lo'], kind)}, {number(r[f'{key}_hi'], kind)}]"
            values.append(cell)
        lines.append([*ident, *values])
    header = [name for name, _ in RUN_VIEW] + [name for name, _ in RUN_STATS]
    return ("# Every run found\n\nValue [95% bootstrap CI over questions]; speedups over the same-precision AR run "
            "unless marked 16-bit; tok/s excludes prefill unless e2e; Eq. (1) (predicted speedup and tok/s) from "
            "probes or step timings (column eq1_source of runs.csv). weights: real or shape_only (random weights of "
            "the real shapes); acceptance: real, or replay with the source of the imposed τ, whose τ and α are inputs "
            "(no interval); measured and code: when the run started and the commit it ran, so rows measured before "
            "a kernel change show it."
            "\n\n" + markdown(header, lines))


def superseded_markdown(resolution) -> str:
    """The runs left out because a newer run of the same configuration exists (docs/analysis.md, "Several runs")."""
    lines = [[resolution.describe(old), resolution.describe(run)] for run in resolution.kept
             for old in resolution.older.get(run, [])]
    if not lines:
        return ""
    return ("\n## Superseded runs\n\nOlder runs of a configuration measured again; only the newest is used.\n\n"
            + markdown(["older run", "superseded by"], lines))


def canon_text(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def write_all(manifests: list[Manifest], pool, out: Path, n_boot: int, seed: int) -> list[Path]:
    """Every table of every manifest, the index and the run list; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written, index = [], ["# Tables", "", "Regenerate with `make tables`. Each file: paper value, ours ± half the 95% "
                          "bootstrap interval, difference; see docs/analysis.md for the conventions.", ""]
    for manifest in manifests:
        cells = fill(manifest, pool, n_boot=n_boot, seed=seed)
        index += [f"## {manifest.data['title']} ({manifest.id})", ""]
        for table in manifest.tables:
            mine = cells[cells.table == table["id"]]
            files = write_table(manifest, table, mine, out)
            written += files
            index.append(f"- [{table['title']}]({files[0].name}): {_counts(mine, gpu_columns(manifest))}")
        index.append("")
    stats = cell_stats(pool.data.drop(columns="_run"), probes=pool.probes, n_boot=n_boot, seed=seed) \
        if len(pool.data) else pd.DataFrame()
    (out / "runs.md").write_text((runs_markdown(stats) if len(stats) else "# Every run found\n\nNo results.\n")
                                 + superseded_markdown(pool.resolution))
    stats.to_csv(out / "runs.csv", index=False)
    (out / "README.md").write_text("\n".join(index) + "\n- [Every run found](runs.md)\n")
    return [*written, out / "runs.md", out / "runs.csv", out / "README.md"]
