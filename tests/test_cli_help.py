"""The --help page and the generated configuration reference (docs/configuration.md) follow the configs."""

import dataclasses

from specbench.cli_help import render as help_page
from specbench.runner import config_reference


def test_help_lists_groups_options_and_examples():
    page = help_page()
    assert "_schema" not in page
    for line in ("hydra/launcher  gpus, local, slurm", "model           llama31_8b", "[specbench_mini]",
                 "python -m specbench -m +experiment=smoke/NAME", "--debug", "Examples:"):
        assert line in page
    assert "cell/" not in page and "method/" not in page  # experiment building blocks are not listed


def test_configuration_reference_is_current():
    assert config_reference.OUT.read_text() == config_reference.render(), \
        "docs/configuration.md is stale: python -m specbench.runner.config_reference"


def test_configuration_reference_covers_every_field():
    text = config_reference.render()
    found = config_reference.schemas()
    assert {"model", "quant", "dataset", "timing", "runtime", "output"} <= set(found)
    for group, cls in found.items():
        for field in dataclasses.fields(cls):
            assert f"| `{group}.{field.name}` |" in text
    assert "`runtime.device` | `str` | `cpu` | cpu \\| cuda" in text  # the field's own comment
