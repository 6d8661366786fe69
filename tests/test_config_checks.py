"""A bad setting fails at start-up, before any model is built, with an error naming the key, value and range."""

from __future__ import annotations

import dataclasses

import pytest
from hydra.errors import ConfigCompositionException

import specbench.runner.run as run_module
from specbench.config import ConfigValueError
from specbench.drafters import DRAFTERS, drafter_conf
from specbench.drafters.registry import DrafterConf

# a value outside the allowed range for every setting of every drafter
BAD = {
    "ngram": {"min_n": 0, "max_n": 0, "num_tokens": -3, "match": "nearest", "pad": "zero", "on_miss": "always"},
    "draft_model": {"num_tokens": 0},
    "eagle": {"topk": 0, "depth": -1, "tree_size": 1},
    "eagle3": {"topk": 0, "depth": -1, "tree_size": 1},
    "layer_skip": {"keep_fraction": 1.5, "selection": "middle", "num_tokens": 0},
    "hierspec": {"min_draft": 0, "inner_depth": 0, "inner_tree_size": 1, "topk": 0, "first_level": "medusa"},
}
SHARED = {f.name for f in dataclasses.fields(DrafterConf)}  # name, label, head, model, quant
CASES = [(name, key, value) for name, bad in BAD.items() for key, value in bad.items()]


def test_every_drafter_setting_has_a_bad_value_here():
    for name, entry in DRAFTERS.items():
        own = {f.name for f in dataclasses.fields(entry.conf)} - SHARED
        assert own == set(BAD.get(name, {})), f"{name}: add a bad value for each of its settings to BAD"


@pytest.mark.parametrize("name,key,value", CASES)
def test_a_bad_drafter_setting_names_key_value_and_range(name, key, value):
    with pytest.raises(ConfigValueError, match=rf"drafter\.{key}={value!r}.* is not allowed: "):
        drafter_conf({"name": name, key: value})
    drafter_conf({"name": name})  # the shipped defaults pass


def test_a_setting_of_the_wrong_type_names_the_key():
    with pytest.raises(ConfigValueError, match=r"drafter\.num_tokens of drafter ngram: Value 'abc'"):
        drafter_conf({"name": "ngram", "num_tokens": "abc"})
    with pytest.raises(ConfigValueError, match="not a drafter"):
        drafter_conf({"name": "medusa"})


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a model was built before the settings were checked")

    monkeypatch.setattr(run_module.Engine, "model", refuse)


@pytest.mark.parametrize("override,key", [
    ("drafter.num_tokens=-3", "drafter.num_tokens"), ("dataset.max_new_tokens=-5", "dataset.max_new_tokens"),
    ("dataset.max_turns=0", "dataset.max_turns"), ("timing.repeats=0", "timing.repeats"),
    ("engine.fuse_projections=false", "engine.fuse_projections"),
    ("timing.acceptance=fake", "timing.acceptance"), ("runtime.top_p=0", "runtime.top_p"),
    ("runtime.dtype=int8", "runtime.dtype"),
])
def test_the_runner_refuses_a_bad_setting_before_loading_anything(hydra_compose, no_model, override, key):
    with pytest.raises(ConfigValueError, match=rf"{key}=.* is not allowed"):
        run_module.run(hydra_compose(override))


def test_hydra_refuses_a_non_number_and_an_unknown_drafter_key(hydra_compose):
    with pytest.raises(ConfigCompositionException) as info:
        hydra_compose("drafter.num_tokens=abc")
    assert "drafter.num_tokens" in str(info.value.__cause__)
    with pytest.raises(ConfigCompositionException):
        hydra_compose("drafter.num_token=5")  # a typo is no longer carried silently to the drafter


def test_compare_names_only_registered_drafters(hydra_compose):
    from hydra.errors import MissingConfigException

    with pytest.raises(MissingConfigException, match="compare/medusa"):
        hydra_compose("compare=[eagle,medusa]")


def test_compared_drafters_settings_are_in_the_composed_config(hydra_compose, no_model):
    """``--cfg job`` shows every compared drafter's settings; an override reaches its method, a bad one stops."""
    default = hydra_compose()
    assert list(default.compare) == ["draft_model", "eagle"] and default.compare.eagle.topk == 10
    cfg = hydra_compose("compare=[draft_model,eagle]", "compare.eagle.topk=4")
    methods = run_module.check_config(cfg)
    assert [m.drafter.name for m in methods] == ["none", "ngram", "draft_model", "eagle"]
    assert methods[-1].drafter.topk == 4 and "compare" not in methods[-1]
    assert list(hydra_compose("compare=[]").compare) == []
    with pytest.raises(ConfigCompositionException):
        hydra_compose("compare.eagle.top_k=4")  # a typo fails at composition
    with pytest.raises(ConfigValueError, match=r"compare\.eagle\.topk=0 is not allowed"):
        run_module.run(hydra_compose("compare.eagle.topk=0"))
    with pytest.raises(ConfigValueError, match=r"compare\.eagle\.name='ngram' is not allowed"):
        run_module.run(hydra_compose("compare.eagle.name=ngram"))
