"""Drafters refuse bad settings with errors that say what to change; EAGLE heads load from the published layout."""

from __future__ import annotations

import random

import pytest

from specbench.config import ConfigValueError
from specbench.decoding.generate import generate
from specbench.decoding.replay import ReplayAcceptance
from specbench.drafters.draft_model import TokenizerMismatchError
from specbench.drafters.eagle_head import EagleHeadError, load_eagle_head
from specbench.drafters.layer_skip import kept_layers
from specbench.drafters.ngram import lookup
from tests.conftest import tiny_hf_model, write_eagle_head
from tests.drafter_stack import Stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    return Stack(tmp_path_factory.mktemp("errors"), num_hidden_layers=2)


def test_draft_model_with_another_vocabulary_is_refused(stack, tmp_path):
    other = tiny_hf_model("llama", vocab_size=120)
    other.save_pretrained(tmp_path / "other")
    with pytest.raises(TokenizerMismatchError, match="one tokenizer"):
        stack.drafter("draft_model", model={"source": str(tmp_path / "other")})


def test_tree_over_the_limit_is_refused(stack):
    with pytest.raises(ValueError, match="tree_size"):
        stack.drafter("eagle", tree_size=500)


def test_eagle_head_of_another_model_is_refused(stack, tmp_path):
    wide = tiny_hf_model("llama", hidden_size=96, num_attention_heads=4, num_key_value_heads=2)
    write_eagle_head(tmp_path / "wide", wide)
    with pytest.raises(EagleHeadError, match="trained for another model"):
        load_eagle_head(str(tmp_path / "wide"), stack.target)


def test_rotation_mismatch_is_refused_both_ways(stack, tmp_path):
    rotated = write_eagle_head(tmp_path / "rot", stack.hf, rotation=True)
    with pytest.raises(EagleHeadError, match="plain head"):
        load_eagle_head(str(rotated), stack.target, target_rotated=False)
    with pytest.raises(EagleHeadError, match="rotated model"):
        load_eagle_head(str(stack.path / "eagle"), stack.target, target_rotated=True)
    head = load_eagle_head(str(rotated), stack.target, target_rotated=True)
    assert head.rotated and head.lm_head is not stack.target.lm_head


def test_published_layout_head_loads_and_drafts_a_tree(stack):
    drafter = stack.drafter("eagle", topk=3, depth=3, tree_size=10)
    stack.session.reset()
    _, hidden = stack.session.extend([5, 6, 7, 8])
    drafter.observe([5, 6, 7, 8, 9], hidden, 0)
    draft = drafter.propose([5, 6, 7, 8, 9], 64)
    assert len(draft) == 9 and max(draft.depths) <= 3
    assert sum(1 for p in draft.parents if p == -1) <= 3  # top-k children of the root


def test_layer_fraction_that_keeps_no_layer_is_refused():
    with pytest.raises(ValueError, match="keeps no layer"):
        kept_layers(32, 0.01)
    assert kept_layers(32, 0.5) == sorted(set(kept_layers(32, 0.5))) and len(kept_layers(32, 0.5)) == 16
    assert kept_layers(8, 0.5, "first") == [0, 1, 2, 3]


def test_ngram_rule_takes_the_earliest_match_and_clamps():
    tokens = [1, 2, 3, 9, 1, 2, 3, 7, 1, 2]
    assert lookup(tokens, 1, 3, 3) == [3, 9, 1]  # earliest "1 2" is at 0
    assert lookup(tokens, 1, 3, 3, match="latest") == [3, 7, 1]
    assert lookup([4, 5, 4], 1, 3, 3) == [5, 4, 4]  # runs past the end: the last token repeats
    assert lookup([4, 5, 4], 1, 3, 3, pad="truncate") == [5, 4]
    assert lookup([1, 2, 3], 1, 3, 3) == []


def test_ngram_on_miss_repeat_drafts_every_step_so_replay_reaches_its_tau(stack):
    """Random tokens never recur: plain n-gram drafting then drafts nothing and a replayed tau cannot be reached;
    on_miss=repeat verifies num_tokens + 1 tokens every step and the replay imposes its tau."""
    prompt = list(range(3, 23))  # no token twice
    results = {}
    for on_miss in (None, "repeat"):
        drafter = stack.drafter("ngram", on_miss=on_miss, min_n=2)
        results[on_miss] = generate(stack.session, drafter, prompt, max_new_tokens=60,
                                    acceptor=ReplayAcceptance(tau=3.0))
    repeat = results["repeat"]
    assert all(n == 4 for n in repeat.drafted[:-1]) and repeat.tau > 2.8
    assert results[None].tau < repeat.tau
    with pytest.raises(ConfigValueError, match="drafter.on_miss"):
        stack.drafter("ngram", on_miss="always")


def test_replay_imposes_the_mean_accept_length():
    replay = ReplayAcceptance(tau=2.5)
    lengths = [replay.length() for _ in range(100)]
    assert sum(lengths) / 100 == 2.5 and set(lengths) == {2, 3}
    with pytest.raises(ValueError, match="at least 1"):
        ReplayAcceptance(tau=0.5)


def scan(tokens, min_n, max_n, num_tokens, match, pad):
    """The n-gram rule written as a plain scan (the oracle for the vectorised ``lookup``)."""
    size = len(tokens)
    for n in range(min(max_n, size - 1), min_n - 1, -1):
        starts = range(size - n) if match == "earliest" else range(size - n - 1, -1, -1)
        for s in starts:
            if tokens[s : s + n] == tokens[size - n :]:
                if pad == "clamp":
                    return [tokens[min(s + n + i, size - 1)] for i in range(num_tokens)]
                return tokens[s + n : s + n + num_tokens]
    return []


def test_ngram_lookup_agrees_with_a_plain_scan_on_random_sequences():
    rng = random.Random(0)
    for _ in range(3000):
        tokens = [rng.randrange(rng.randint(1, 5)) for _ in range(rng.randint(1, 25))]
        min_n = rng.randint(1, 3)
        max_n, gamma = rng.randint(min_n, 4), rng.randint(1, 6)
        for match in ("earliest", "latest"):
            for pad in ("clamp", "truncate"):
                assert lookup(tokens, min_n, max_n, gamma, match, pad) == scan(tokens, min_n, max_n, gamma, match, pad)


@pytest.mark.slow  # Llama-3's 128k vocabulary on a narrow 2-layer shape: ~40 s
def test_random_eagle_head_grows_deep_trees_so_replay_reaches_its_tau():
    """A shape-only target's LM head gives nearly uniform logits over 128k tokens; EAGLE-2's tree through it stays
    about three deep and a replayed 4.16 came out as 2.97. The random head's own peaked LM head fixes that."""
    from specbench.config.schema import EngineConf
    from specbench.drafters.eagle_head import random_eagle_head
    from specbench.engine import Engine

    engine = Engine(EngineConf(cuda_graphs=False, gemv=False), max_seq_len=512)
    shape = {"num_hidden_layers": 2, "hidden_size": 128, "intermediate_size": 256, "num_attention_heads": 2,
             "num_key_value_heads": 1, "head_dim": 64}
    session = engine.session(engine.model({"source": "llama-3-70b-instruct", "shape_only": True, "overrides": shape}))
    head = random_eagle_head(session.model)
    assert head.lm_head is not session.model.lm_head  # its own, so the target's logits stay the target's
    drafter = engine.drafter({"name": "eagle", "head": "random", "topk": 10, "depth": 6, "tree_size": 48}, session)
    gen = generate(session, drafter, list(range(100, 140)), max_new_tokens=100, acceptor=ReplayAcceptance(tau=4.16))
    assert gen.tau > 4.0, gen.tau


def test_random_eagle_head_keeps_its_features_bounded_over_deep_trees():
    """Each draft pass feeds the head's output back as its feature; with N(0, 0.02) weights it grew about fourfold
    per pass at Llama-3-70B's width and overflowed float16 by depth 6 (NaN scores on the H200). At 8B's width the
    growth is already above twofold per pass; the random head's gains keep it flat."""
    from specbench.config.schema import EngineConf
    from specbench.engine import Engine

    engine = Engine(EngineConf(cuda_graphs=False, gemv=False), max_seq_len=256)
    shape = {"num_hidden_layers": 1, "intermediate_size": 512, "vocab_size": 512}
    session = engine.session(engine.model({"source": "llama-3-8b-instruct", "shape_only": True, "overrides": shape}))
    drafter = engine.drafter({"name": "eagle", "head": "random", "topk": 4, "depth": 8, "tree_size": 32}, session)
    peaks, forward = [], drafter.head.forward

    def recorded(*args, **kwargs):
        out = forward(*args, **kwargs)
        peaks.append(float(out.abs().max()))
        return out

    drafter.head.forward = recorded
    generate(session, drafter, list(range(10, 30)), max_new_tokens=2, acceptor=ReplayAcceptance(tau=2.0))
    passes = peaks[1:8]  # the first draft's seven expansion passes, after the prompt's
    assert len(passes) == 7 and max(passes) < 4 * passes[0], peaks
