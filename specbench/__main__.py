"""``python -m specbench [overrides]``: the Hydra entry point (config tree in ``conf/``)."""

from __future__ import annotations

import logging
from pathlib import Path

import hydra
from omegaconf import DictConfig

from specbench.runner.config import register_schemas

CONF = str(Path(__file__).resolve().parent.parent / "conf")
register_schemas()


@hydra.main(version_base="1.3", config_path=CONF, config_name="config")
def main(cfg: DictConfig) -> None:
    from specbench.runner.run import run
    from specbench.runner.summary import print_summary, summarize

    logging.getLogger("specbench").info("run folders under %s/%s", cfg.output.root, cfg.output.name)
    folders = run(cfg)
    print_summary(summarize(folders))
    for folder in folders:
        print(f"results: {folder / 'results.parquet'}")


if __name__ == "__main__":
    main()
