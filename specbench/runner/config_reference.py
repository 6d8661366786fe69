"""``docs/configuration.md``: every setting of the run config, generated from the structured configs.

Each config group with a schema registered in Hydra's ConfigStore (``<group>_schema``, a dataclass) gets a table of
its fields: type, default and the comment written beside the field in the dataclass; the drafters, whose settings
differ per option, get one such table per option from the drafter registry's schemas. The options of every
group come from ``conf/``. ``python -m specbench.runner.config_reference`` rewrites the file (``make docs``); a
test checks the committed one is current.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import json
import sys
import tokenize
from pathlib import Path

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from specbench.runner.config import register_schemas

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
OUT = ROOT / "docs" / "configuration.md"
GROUPS = ["model", "quant", "drafter", "dataset", "engine", "timing", "runtime", "output"]
INTERNAL = {"cell", "method", "hs_d", "hs_d1", "ngram_k"}  # experiment building blocks, not run on their own


def options(group: str) -> list[str]:
    """The options of a config group: its YAML files under ``conf/`` (``experiment``: sub-folders as ``a/b``)."""
    folder = CONF / group
    names = [p.relative_to(folder).with_suffix("").as_posix() for p in folder.rglob("*.yaml")]
    return sorted(n for n in names if n.split("/")[0] not in INTERNAL)


def defaults() -> dict[str, str]:
    """``group -> option`` of ``conf/config.yaml``'s defaults list."""
    chosen = {}
    for item in OmegaConf.load(CONF / "config.yaml").defaults:
        if not isinstance(item, str):
            chosen.update({str(k): str(v) for k, v in item.items()})
    return chosen


def schemas() -> dict[str, type]:
    """``group -> dataclass`` of every ``<group>_schema`` in the ConfigStore."""
    register_schemas()
    found = {}
    for group in GROUPS:
        try:
            node = ConfigStore.instance().load(f"{group}/{group}_schema.yaml")
        except Exception:  # noqa: BLE001 - ConfigLoadError / KeyError: the group has no schema
            continue
        found[group] = OmegaConf.get_type(node.node)
    return found


def field_comments(cls: type) -> dict[str, str]:
    """The ``# comment`` on the line of each field in ``cls``'s source."""
    source = inspect.getsource(cls)
    comments = {tok.start[0]: tok.string.lstrip("#").strip()
                for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}
    tree = ast.parse(source).body[0]
    return {node.target.id: comments[node.lineno] for node in tree.body
            if isinstance(node, ast.AnnAssign) and node.lineno in comments}


def default_text(f: dataclasses.Field) -> str:
    """The default as it is written on the command line (``true``, ``null``, ``{}``), or ``required``."""
    if f.default is not dataclasses.MISSING and f.default is not MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "required"
    if dataclasses.is_dataclass(value):
        value = dataclasses.asdict(value)
    return f"`{value}`" if isinstance(value, str) else f"`{json.dumps(value)}`"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]


def settings_table(prefix: str, cls: type) -> list[str]:
    """The fields of schema ``cls`` as a table of ``prefix.KEY`` rows."""
    notes = {}
    for klass in reversed(cls.__mro__[:-1]):  # a subclass's comment wins over its base's
        notes.update(field_comments(klass))
    return table(["key", "type", "default", "meaning"], [
        [f"`{prefix}.{f.name}`", f"`{f.type}`", default_text(f), notes.get(f.name, "—")]
        for f in dataclasses.fields(cls)])


def group_section(group: str, cls: type | None, chosen: str | None) -> list[str]:
    lines = [f"## `{group}`", "", f"Options (`{group}=NAME`): " + ", ".join(
        f"**{o}**" if o == chosen else o for o in options(group)) + (f" (default **{chosen}**)" if chosen else ""), ""]
    if cls is not None:
        lines += [f"Settings (`{group}.KEY=VALUE`, schema `{cls.__name__}`):", ""] + settings_table(group, cls)
    else:  # the drafters: one schema per option
        from specbench.drafters import DRAFTERS

        for option in options(group):
            conf = DRAFTERS[OmegaConf.load(CONF / group / f"{option}.yaml").name].conf
            lines += ["", f"### `{group}={option}` (schema `{conf.__name__}`)", ""] + settings_table(group, conf)
    return lines + [""]


def render() -> str:
    found, chosen = schemas(), defaults()
    lines = ["# Configuration reference", "",
             "Generated by `python -m specbench.runner.config_reference` (`make docs`) from the structured configs in "
             "`specbench/config/`, `specbench/runner/config.py`, `specbench/drafters/` and the options in `conf/`; do not edit by hand. Set any value on the "
             "command line: `python -m specbench GROUP=OPTION GROUP.KEY=VALUE` (`python -m specbench --help`).", "",
             "Top level: `baseline` (also measure the autoregressive baseline, default true). Group `compare`: more "
             "drafters measured against the same loaded target, a list of drafter names (default `[draft_model, "
             "eagle]`, `compare=[]` for none); each one's settings are its drafter schema's (below) at "
             "`compare.<name>.<key>`, e.g. `compare.eagle.topk=8`, and `--cfg job` shows them.", ""]
    for group in GROUPS:
        lines += group_section(group, found.get(group), chosen.get(group))
    lines += ["## `experiment`", "", "Paper experiments (`-m +experiment=NAME`; `smoke/NAME`: the CPU variant): "
              + ", ".join(options("experiment")), "", "## `hydra/launcher`", "",
              "Parallel jobs of a multirun (`hydra/launcher=NAME`): " + ", ".join(options("hydra/launcher")), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT}", file=sys.stderr)
