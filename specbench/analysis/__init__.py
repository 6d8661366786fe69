"""Analysis of result parquet files: loading, paired-bootstrap cell statistics, paper tables and plots.

    from specbench.analysis import load_results, cell_stats
    data = load_results("results/smoke", filters={"runtime.temperature": 0.0}, steps=True)
    stats = cell_stats(data)            # one row per run: tok/s, tau, alpha, speedups (both denominators), Eq. (1)

``python -m specbench.analysis tables|plots`` regenerates the per-paper tables (from ``experiments/*.yaml``)
and the figures.
"""

from specbench.analysis.bootstrap import Estimate, bootstrap
from specbench.analysis.cells import cell_stats, evaluate
from specbench.analysis.load import load_probes, load_results, load_steps
from specbench.analysis.pool import Pool

__all__ = ["Estimate", "Pool", "bootstrap", "cell_stats", "evaluate", "load_probes", "load_results", "load_steps"]
