"""Figures from the run statistics (``cell_stats``) and the quantized-linear benchmark, as PNG and PDF.

* ``speedup_bars``: Figure 1 of 2505.22179 - quantization alone (solid) plus what a drafter adds (hatched) over
  the 16-bit AR run, per scheme, with the drafter's speedup over same-precision AR written above each bar;
* ``tree_sweep``: Figures 2-3 - tau, T_v(n)/T_t and speedup against EAGLE-2 tree size, a line per scheme;
* ``temperature`` and ``k_gamma``: Quasar's Tables 2-3 - n-gram speedup and L against T and against gamma;
* ``eq1``: Eq. (1)'s predicted speedup against the measured one;
* ``kernel_backends``: the linear stack's milliseconds against M with each scheme's roofline, and T(M)/T(1), per
  scheme x backend from ``quant_linear.json`` (``benchmarks/bench_quant_linear.py --out DIR``).

A row of panels per setting (model, device, weights and acceptance: "shape-only, τ replayed" or "real weights",
``engine.compile``, dataset, answer length, temperature); bands and error bars are 95% bootstrap intervals. A figure without data says
so on the figure.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from specbench.analysis.cells import cell_stats  # noqa: E402
from specbench.analysis.pool import SIXTEEN_BIT  # noqa: E402
from specbench.analysis.resolve import canon  # noqa: E402
from specbench.analysis.load import find_files  # noqa: E402

STYLE = {"figure.dpi": 110, "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 7,
         "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False}
SCHEMES = ["none", "fp16", "bf16", "w8a8_int8", "w8a8_fp8", "w8a16", "w4a16", "w4a8", "w4a8_fp8", "auto"]
COLORS = dict(zip(SCHEMES, plt.get_cmap("tab10").colors))
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
PANEL_W, PANEL_H = 3.3, 2.4


def scheme_label(row: pd.Series) -> str:
    scheme = row["quant.scheme"]
    label = "16-bit" if scheme in SIXTEEN_BIT else scheme
    group = row.get("quant.group_size")
    return label + (f"-g{int(group)}" if isinstance(group, (int, float)) and not pd.isna(group) and group > 0 else "")


def provenance(row: pd.Series) -> str:
    """How a run's numbers came about: "shape-only, τ replayed", "real weights" (measured acceptance), ..."""
    weights = "shape-only" if row.get("weights") == "shape_only" else "real weights"
    return weights + (", τ replayed" if row.get("acceptance_source") == "replay" else "")


def setting(row: pd.Series) -> str:
    device = row["env.gpu"] if isinstance(row.get("env.gpu"), str) else row["runtime.device"]
    tokens = int(row["dataset.max_new_tokens"] or 0)
    temperature = row["runtime.temperature"]
    compiled = canon(row.get("engine.compile")) is True  # a compiled run gets its own panels; older rows lack it
    return (f"{row['model.source']} · {device} · {provenance(row)}{' · compiled' if compiled else ''} · "
            f"{row['dataset.name']} · {tokens} tok · T={temperature:g}")


def figure(rows: int, cols: int, title: str, wide: bool = False):
    """A grid of panels under ``title`` (at most two lines: keep titles short, details go in the panels);
    ``wide``: one panel per row, ``cols`` panels wide."""
    fig, axes = plt.subplots(rows, 1 if wide else cols, figsize=(PANEL_W * cols, PANEL_H * rows + 0.5),
                             squeeze=False)
    fig.suptitle(textwrap.fill(title, width=int(PANEL_W * cols * 15), max_lines=2, placeholder=" …"),
                 fontsize=9)
    return fig, axes


def no_data(title: str, why: str):
    fig, axes = figure(1, 1, title)
    axes[0, 0].axis("off")
    axes[0, 0].text(0.5, 0.5, f"no data\n{why}", ha="center", va="center", fontsize=9, color="0.4",
                    transform=axes[0, 0].transAxes)
    return fig


# no dates or library versions in the files: the same results give the same bytes
METADATA = {".png": {"Software": None}, ".pdf": {"CreationDate": None, "Creator": None, "Producer": None}}


def save(fig, out: Path, name: str) -> list[Path]:
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))  # room for the two-line title
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    for path in paths:
        fig.savefig(path, metadata=METADATA[path.suffix])
    plt.close(fig)
    return paths


def _err(frame: pd.DataFrame, key: str) -> list:
    return [(frame[key] - frame[f"{key}_lo"]).clip(lower=0).fillna(0),
            (frame[f"{key}_hi"] - frame[key]).clip(lower=0).fillna(0)]


def _best(frame: pd.DataFrame) -> pd.Series:
    """The run with the most questions (then the first config hash): one bar per scheme, no cherry-picking."""
    return frame.sort_values(["n_questions", "config_hash"], ascending=[False, True]).iloc[0]


def speedup_bars(stats: pd.DataFrame, drafter: str = "eagle"):
    title = f"Speedup over 16-bit AR: quantization (solid) + {drafter} (hatched); ↑ {drafter} over same-precision AR"
    ar = stats[stats.drafter == "none"]
    if ar.empty:
        return no_data(title, "no autoregressive runs")
    settings = sorted(ar.setting.unique())
    fig, axes = figure(len(settings), 2, title, wide=True)  # one panel per row, two panels wide: room for labels
    for ax, key in zip(axes[:, 0], settings):
        here = stats[stats.setting == key]
        here, shape = _one_drafter_setting(here, drafter)
        bars = []
        for label, runs in here[here.drafter == "none"].groupby("scheme_label", sort=False):
            base = _best(runs)
            sd = here[(here.drafter == drafter) & (here.scheme_label == label)]
            bars.append((label, base, _best(sd) if len(sd) else None))
        bars.sort(key=lambda b: SCHEMES.index(b[1]["quant.scheme"]) if b[1]["quant.scheme"] in SCHEMES else 99)
        if all(math.isnan(b[1]["speedup16"]) for b in bars):
            ax.text(0.5, 0.5, "no 16-bit AR run in this setting", ha="center", transform=ax.transAxes, color="0.4")
        for x, (label, base, sd) in enumerate(bars):
            color = COLORS.get(base["quant.scheme"], "0.5")
            quant = base["speedup16"]
            ax.bar(x, quant, color=color, width=0.6)
            if sd is None:
                ax.text(x, quant, f"no {drafter} run", ha="center", va="bottom", fontsize=6, color="0.4")
                continue
            gain = sd["speedup16"] - quant
            if gain >= 0:
                ax.bar(x, gain, bottom=quant, color=color, alpha=0.45, hatch="//", width=0.6)
            else:  # the drafter is slower than AR: cross out what it loses
                ax.bar(x, -gain, bottom=sd["speedup16"], color="white", edgecolor="0.3", hatch="xx", width=0.6, lw=0)
            low, high = sd["speedup16"] - sd["speedup16_lo"], sd["speedup16_hi"] - sd["speedup16"]
            ax.errorbar(x, sd["speedup16"], yerr=[[max(low, 0)], [max(high, 0)]], color="k", capsize=2, lw=0.8)
            ax.text(x, max(sd["speedup16_hi"], quant), f"↑{sd['speedup']:.2f}", ha="center", va="bottom",
                    color="tab:red", fontsize=7)
        tops = [max(b[1]["speedup16"], b[2]["speedup16_hi"] if b[2] is not None else 0) for b in bars]
        ax.set_ylim(0, max([1.0, *[t for t in tops if math.isfinite(t)]]) * 1.2)
        ax.set_xticks(range(len(bars)), [b[0] for b in bars], rotation=20, ha="right")
        ax.axhline(1, color="0.3", lw=0.6)
        ax.set_ylabel("speedup over 16-bit AR")
        ax.set_title(key + (f" · {drafter} {shape}" if shape else ""), loc="left")
    return fig


SHAPE_KEYS = ("drafter.depth", "drafter.topk", "drafter.tree_size")


def _one_drafter_setting(here: pd.DataFrame, drafter: str) -> tuple[pd.DataFrame, str]:
    """``here`` with the drafter's runs narrowed to one (depth, topk, tree size), so every bar shows the same
    method: the one run for the most schemes, then the largest tree; and that setting as a label."""
    sd = here[here.drafter == drafter]
    keys = [k for k in SHAPE_KEYS if k in sd]
    if sd.empty or not keys:
        return here, ""
    counts = sd.groupby(keys, dropna=False).scheme_label.nunique().reset_index(name="schemes")
    best = counts.sort_values(["schemes", *keys[::-1]], ascending=False).iloc[0]
    keep = (here.drafter != drafter) | (here[keys] == best[keys]).all(axis=1)
    short = {"drafter.depth": "d", "drafter.topk": "k", "drafter.tree_size": "n"}
    return here[keep], " ".join(f"{short[k]}={best[k]:g}" for k in keys)


def _lines(ax, frame: pd.DataFrame, x: str, y: str, group: list[str], label_of, style: str = "-") -> None:
    """A line per group: colour = scheme, marker = the group's rank within its scheme; dashed lines (a second
    denominator) have hollow markers, so no two legend entries look alike."""
    seen: dict[str, int] = {}
    for key, line in frame.groupby(group, sort=True, dropna=False):
        line = line.sort_values(x)
        scheme = line["quant.scheme"].iloc[0]
        color, rank = COLORS.get(scheme, "0.5"), seen.setdefault(scheme, 0)
        seen[scheme] += 1
        ax.plot(line[x], line[y], style, marker=MARKERS[rank % len(MARKERS)], ms=3.5, color=color,
                markerfacecolor="white" if style != "-" else color, label=label_of(line.iloc[0]))
        if f"{y}_lo" in line and line[f"{y}_lo"].notna().any():
            ax.fill_between(line[x], line[f"{y}_lo"], line[f"{y}_hi"], color=color, alpha=0.15, lw=0)


def sweep(stats: pd.DataFrame, title: str, x: str, xlabel: str, panels: list[tuple[str, str]], group: list[str],
          label_of, why: str):
    """A row of panels per setting: each ``(column, ylabel)`` against ``x``, a line per ``group``."""
    frame = stats.dropna(subset=[x]) if x in stats else stats.iloc[:0]
    if frame.empty:
        return no_data(title, why)
    settings = sorted(frame.setting.unique())
    fig, axes = figure(len(settings), len(panels), title)
    for r, key in enumerate(settings):
        here = frame[frame.setting == key]
        for c, (column, ylabel) in enumerate(panels):
            ax = axes[r, c]
            _lines(ax, here, x, column, group, label_of)
            if column == "speedup" and "speedup16" in here and (here.speedup16 != here.speedup).any():
                _lines(ax, here[here.speedup16 != here.speedup], x, "speedup16", group,
                       lambda row: f"{label_of(row)} (vs 16-bit)", "--")
            if column == "tau" and "τ replayed" in key:  # an input of the run, not a measurement
                ylabel = f"{ylabel}: replayed input"
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_title(key if c == 0 else ylabel, loc="left" if c == 0 else "center")
        axes[r, 0].legend(frameon=False)
    return fig


def tree_sweep(stats: pd.DataFrame):
    eagle = stats[stats.drafter == "eagle"]
    return sweep(eagle, "Our runs in the layout of 2505.22179 Figs. 2-3: EAGLE-2 against tree size, a row per "
                 "setting (GPU, weights, acceptance); T_v(n)/T_t from probes or step timings; dashed: over 16-bit AR",
                 "drafter.tree_size", "tree size n (verified tokens)",
                 [("tau", "tau (bonus counted)"), ("tv_over_tt", "T_v(n)/T_t"),
                  ("speedup", "speedup over same-precision AR")],
                 ["scheme_label", "drafter.depth"], lambda r: f"{r.scheme_label} d={r['drafter.depth']:g}",
                 "no EAGLE runs with drafter.tree_size")


def _ngram_label(row: pd.Series) -> str:
    return f"{row.scheme_label} K=({row['drafter.min_n']:g},{row['drafter.max_n']:g}) γ={row['drafter.num_tokens']:g}"


def temperature(stats: pd.DataFrame):
    """n-gram runs across temperatures (the setting leaves T out, so one panel row holds every T)."""
    ngram = stats[stats.drafter == "ngram"]
    frame = ngram.assign(setting=ngram.setting.str.replace(r" · T=[0-9.]+$", "", regex=True))
    return sweep(frame, "Our runs in the layout of Quasar Table 2: n-gram drafting against temperature, a row "
                 "per setting (GPU, weights, acceptance); dashed: over 16-bit AR",
                 "runtime.temperature", "temperature T", [("speedup", "speedup (prefill excl.)"),
                                                          ("tau", "L (accepted length)")],
                 ["scheme_label", "drafter.min_n", "drafter.max_n", "drafter.num_tokens"], _ngram_label,
                 "no n-gram runs")


def k_gamma(stats: pd.DataFrame):
    ngram = stats[stats.drafter == "ngram"]
    return sweep(ngram, "Our runs in the layout of Quasar Table 3: n-gram drafting against gamma, a "
                 "line per K, a row per setting (GPU, weights, acceptance)", "drafter.num_tokens",
                 "gamma (draft tokens)", [("speedup", "speedup (prefill excl.)"), ("tau", "L (accepted length)")],
                 ["scheme_label", "drafter.min_n", "drafter.max_n"],
                 lambda r: f"{r.scheme_label} K=({r['drafter.min_n']:g},{r['drafter.max_n']:g})", "no n-gram runs")


def eq1(stats: pd.DataFrame):
    title = "Eq. (1): predicted tau / (d T_d/T_t + T_v/T_t) against measured speedup"
    needed = ["speedup", "predicted_speedup"]
    sd = stats[stats.drafter != "none"].dropna(subset=needed) if set(needed) <= set(stats) else stats.iloc[:0]
    if sd.empty:
        return no_data(title, "no drafter runs with a same-precision AR baseline")
    fig, axes = figure(1, 1, title)
    ax = axes[0, 0]
    for (drafter, source), part in sd.groupby(["drafter", sd.eq1_source.str.contains("probes")]):
        ax.errorbar(part.speedup, part.predicted_speedup, xerr=_err(part, "speedup"),
                    yerr=_err(part, "predicted_speedup"), fmt="o" if source else "s", ms=3, lw=0.6, capsize=1.5,
                    label=f"{drafter} ({'probes' if source else 'step timings'})")
    top = max(sd.speedup_hi.max(), sd.predicted_speedup.max()) * 1.1
    ax.plot([0, top], [0, top], color="0.5", lw=0.6)
    ax.set_xlabel("measured speedup (same-precision AR)")
    ax.set_ylabel("Eq. (1) prediction")
    ax.legend(frameon=False)
    return fig


def kernel_backends(bench_files: list[Path]):
    """Per (GPU, model): the whole linear stack's time against M on log axes with each scheme's bandwidth roofline
    (dotted, at the same run's copy bandwidth), and below it T(M)/T(1). CPU files (the committed smoke run) are drawn
    only when no GPU file is found."""
    title = ("Quantized linear layers: the whole linear stack's time against M (dotted: each scheme's roofline) and "
             "T(M)/T(1), per scheme x backend (benchmarks/bench_quant_linear.py)")
    rows = []
    for path in bench_files:
        data = json.loads(Path(path).read_text())
        rows += [{**r, "device": data.get("device", "?"), "measured": measured_when(Path(path), data)}
                 for r in data.get("rows", [])]
    if not rows:
        return no_data(title, "no quant_linear.json (run benchmarks/bench_quant_linear.py --out DIR)")
    frame = newest_lines(pd.DataFrame(rows))
    gpu = frame.device != "cpu"
    if gpu.any():
        frame = frame[gpu]
    panels = sorted(frame[["device", "model"]].drop_duplicates().itertuples(index=False))
    fig, axes = figure(3, len(panels), title)
    for col, (device, model) in enumerate(panels):
        here = frame[(frame.device == device) & (frame.model == model)]
        absolute, ratio, key = axes[0, col], axes[1, col], axes[2, col]
        for i, ((scheme, group, backend), line) in enumerate(here.groupby(["scheme", "group_size", "backend"])):
            line = line.sort_values("M")
            style = "--" if backend in ("dense", "reference") else "-"
            kw = dict(marker=MARKERS[i % len(MARKERS)], ms=3, color=COLORS.get(scheme),
                      label=f"{scheme}{'' if group in (-1, None) else f'-g{group}'} · {backend}")
            absolute.plot(line.M, line.stack_ms, style, **kw)
            ratio.plot(line.M, line.ratio_to_M1, style, **kw)
        if "roofline_ms" in here:
            for scheme, roof in here.groupby("scheme").roofline_ms.first().dropna().items():
                absolute.axhline(roof, ls=":", lw=0.8, color=COLORS.get(scheme))
        for ax in (absolute, ratio):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("M (tokens in the forward)")
        absolute.set_yscale("log")
        absolute.set_ylabel("linear stack ms")
        ratio.set_ylabel("T(M) / T(1)")
        absolute.set_title(f"{model} · {device}")
        key.axis("off")  # the legend below its two panels, clear of the lines
        key.legend(*absolute.get_legend_handles_labels(), loc="upper center", ncol=2, frameon=False, fontsize=6)
    return fig


LINE = ["device", "model", "scheme", "group_size", "backend"]


def measured_when(path: Path, data: dict) -> str:
    """When a benchmark file was measured: its ``date``, else the ``YYYY-MM-DD`` folder it sits in, then its path
    (files of one day sort by name)."""
    day = next((part for part in reversed(path.parts) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", part)), "")
    return f"{data.get('date') or day}|{path}"


def newest_lines(frame: pd.DataFrame) -> pd.DataFrame:
    """One benchmark file per line (GPU, model, scheme, group, backend): the newest; older files never mix in."""
    newest = frame.groupby(LINE, dropna=False).measured.transform("max")
    return frame[frame.measured == newest]


def write_all(pool, out: Path, results, bench: list | None, n_boot: int, seed: int) -> list[Path]:
    """Every figure, PNG and PDF, under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    data = pool.data.drop(columns="_run")
    stats = cell_stats(data, probes=pool.probes, n_boot=n_boot, seed=seed) if len(data) else pd.DataFrame(
        columns=["drafter", "setting", "scheme_label"])
    if len(stats):
        stats = stats.assign(setting=stats.apply(setting, axis=1), scheme_label=stats.apply(scheme_label, axis=1))
    bench_files = [Path(p) for p in bench] if bench is not None else find_files(results, "quant_linear.json")
    written = []
    with plt.rc_context(STYLE):
        for name, make in (("speedup_bars", lambda: speedup_bars(stats)), ("tree_sweep", lambda: tree_sweep(stats)),
                           ("temperature", lambda: temperature(stats)),
                           ("k_gamma", lambda: k_gamma(stats)), ("eq1", lambda: eq1(stats)),
                           ("kernel_backends", lambda: kernel_backends(bench_files))):
            written += save(make(), out, name)
    return written
