# specbench: install, test, run, rebuild tables and plots.
PY ?= python
TORCH_CPU ?= torch==2.13.0

.PHONY: install install-gpu test test-fast run tables plots docs campaign campaign-list

install:  ## everything, with the CPU build of torch (pip finds it on local disk here; elsewhere use the CPU index)
	$(PY) -m pip install "$(TORCH_CPU)"
	$(PY) -m pip install -e ".[test]"

install-gpu:  ## a CUDA machine: torch from your CUDA index first, then the GPU extra (gemlite)
	$(PY) -m pip install -e ".[test,gpu]"

test:  ## everything (what CI runs)
	$(PY) -m pytest -q -p no:cacheprovider

test-fast:  ## the fast subset: everything not marked slow (lossless greedy, config checks, store, loaders, ...)
	$(PY) -m pytest -q -p no:cacheprovider -m "not slow"

docs:  ## docs/configuration.md from the structured configs
	$(PY) -m specbench.runner.config_reference

run:
	$(PY) -m specbench

RESULTS ?= results
TABLES_OUT ?= docs/tables
FIGURES_OUT ?= docs/figures
N_BOOT ?= 2000

tables:  ## every manifest table (experiments/*.yaml) as Markdown + LaTeX, from the parquet files under RESULTS
	$(PY) -m specbench.analysis tables --results $(RESULTS) --out $(TABLES_OUT) --n-boot $(N_BOOT)

plots:  ## every figure as PNG + PDF, from the parquet files (and quant_linear.json) under RESULTS
	$(PY) -m specbench.analysis plots --results $(RESULTS) --out $(FIGURES_OUT) --n-boot $(N_BOOT)

BUDGET_S ?= 480

campaign:  ## one resumable chunk of the H200 shape-only campaign (run it again to resume); see docs/analysis.md
	$(PY) -m specbench.campaign h200 --budget-s $(BUDGET_S)

campaign-list:  ## the campaign's plan with an estimated GPU time per run and what is done
	$(PY) -m specbench.campaign h200 --list
