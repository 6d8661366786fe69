"""The lm-evaluation-harness adapter, without lm_eval installed: fake scoring functions and a fake LM base."""

from __future__ import annotations

import abc
import sys
import types

import pytest
import torch

from specbench.datasets.lm_eval_adapter import SpecbenchEvalModel, as_lm_eval, native_logits_fn
from tests.tokenizers_for_tests import llama3_tokenizer, qwen3_tokenizer


@pytest.fixture(scope="module")
def tok():
    return llama3_tokenizer()


@pytest.fixture(scope="module")
def table(tok):
    """A bigram 'model': the logits at position t depend only on token t."""
    return torch.randn(len(tok), len(tok), generator=torch.Generator().manual_seed(0))


def bigram(table):
    return lambda ids: table[ids]


def manual_logprob(table, tokens):
    logp = torch.log_softmax(table, dim=-1)
    return sum(float(logp[a, b]) for a, b in zip(tokens[:-1], tokens[1:]))


def test_loglikelihood_matches_a_hand_computation(tok, table):
    model = SpecbenchEvalModel(tok, bigram(table))
    ctx, cont = tok("The cat", add_special_tokens=False).input_ids, tok(" sat", add_special_tokens=False).input_ids
    (logp, greedy), = model.loglikelihood([("The cat ", "sat")])  # the trailing space moves to the continuation
    assert logp == pytest.approx(manual_logprob(table, ctx[-1:] + cont), rel=1e-5)
    assert greedy is False
    (empty_ctx, _), = model.loglikelihood([("", "sat")])
    assert empty_ctx == pytest.approx(manual_logprob(table, [tok.bos_token_id] + tok("sat").input_ids[1:]), rel=1e-5)


def test_is_greedy_when_every_token_is_the_argmax(tok):
    ids = tok("abcd", add_special_tokens=False).input_ids
    table = torch.zeros(len(tok), len(tok))
    for a, b in zip(ids[:-1], ids[1:]):
        table[a, b] = 5.0
    model = SpecbenchEvalModel(tok, bigram(table))
    assert model.loglikelihood([("a", "bcd")])[0][1] is True
    assert model.loglikelihood([("a", "bdc")])[0][1] is False


def test_rolling_windows_score_each_token_once(tok, table):
    text = "def f(x):\n    return x + 1\n"
    ids = [tok.bos_token_id] + tok(text, add_special_tokens=False).input_ids
    full = manual_logprob(table, ids)
    for max_length in (3, 7, 1000):  # a bigram model does not care how much context a window has
        model = SpecbenchEvalModel(tok, bigram(table), max_length=max_length)
        assert model.loglikelihood_rolling([(text,)])[0] == pytest.approx(full, rel=1e-5)

    seen = []

    def spy(ids):
        seen.append(ids.shape[1])
        return table[ids]

    SpecbenchEvalModel(tok, spy, max_length=4).loglikelihood_rolling([("abcdefghij",)])
    assert seen == [4, 4, 4]  # the last window still gets a full context


def test_generate_until_cuts_at_stop_strings(tok):
    ids = tok("xyz", add_special_tokens=False).input_ids
    table = torch.zeros(len(tok), len(tok))
    x, y, z = ids
    table[x, y] = table[y, z] = table[z, x] = 1.0  # x -> y -> z -> x ...
    model = SpecbenchEvalModel(tok, bigram(table))
    out = model.generate_until([("x", {"until": ["zx"], "max_gen_toks": 10}), ("x", {"max_gen_toks": 4})])
    assert out == ["y", "yzxy"]

    calls = []
    fixed = SpecbenchEvalModel(tok, bigram(table), generate_fn=lambda p, n, s: calls.append((p, n, s)) or [y, z])
    assert fixed.generate_until([("x", {"until": "q", "max_gen_toks": 7})]) == ["yz"]
    assert calls == [([x], 7, [tok.eos_token_id, tok.convert_tokens_to_ids("<|eot_id|>")])]
    short = SpecbenchEvalModel(tok, bigram(table), generate_fn=lambda p, n, s: calls.append((p, n)) or [], max_length=4)
    short.generate_until([("xyzxyz", {"max_gen_toks": 100})])
    assert calls[-1] == ([x, y, z], 1)  # prompt + generation fit in max_length


def test_missing_lm_eval_names_the_extra(tok, table, monkeypatch):
    monkeypatch.setitem(sys.modules, "lm_eval", None)
    with pytest.raises(ImportError, match=r"specbench\[eval\]"):
        as_lm_eval(SpecbenchEvalModel(tok, bigram(table)))


def test_wrapper_satisfies_the_lm_interface(tok, table, monkeypatch):
    class LM(abc.ABC):  # the shape of lm_eval.api.model.LM
        def __init__(self):
            self._rank = 0

        @abc.abstractmethod
        def loglikelihood(self, requests): ...

        @abc.abstractmethod
        def loglikelihood_rolling(self, requests): ...

        @abc.abstractmethod
        def generate_until(self, requests): ...

    api = types.ModuleType("lm_eval.api.model")
    api.LM = LM
    monkeypatch.setitem(sys.modules, "lm_eval", types.ModuleType("lm_eval"))
    monkeypatch.setitem(sys.modules, "lm_eval.api", types.ModuleType("lm_eval.api"))
    monkeypatch.setitem(sys.modules, "lm_eval.api.model", api)
    inner = SpecbenchEvalModel(tok, bigram(table))
    lm = as_lm_eval(inner)
    request = types.SimpleNamespace(args=("The cat", " sat"))
    assert isinstance(lm, LM) and lm.loglikelihood([request]) == inner.loglikelihood([("The cat", " sat")])
    assert "<|start_header_id|>user" in lm.apply_chat_template([{"role": "user", "content": "hi"}])


def test_chat_template_kwargs_reach_the_template():
    qwen = qwen3_tokenizer()
    model = SpecbenchEvalModel(qwen, lambda ids: None, chat_template_kwargs={"enable_thinking": False})
    assert model.apply_chat_template([{"role": "user", "content": "hi"}]).endswith("<think>\n\n</think>\n\n")
    assert not SpecbenchEvalModel(qwen, lambda ids: None).apply_chat_template([{"role": "user", "content": "hi"}]) \
        .endswith("</think>\n\n")


def test_native_logits_fn_matches_transformers(save_hf):
    from specbench.model import load_model
    from tests.conftest import tiny_hf_model

    hf = tiny_hf_model("llama")
    ours = load_model(str(save_hf(hf)), dtype=torch.float32)
    ids = torch.randint(0, 96, (1, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.testing.assert_close(native_logits_fn(ours)(ids), hf(ids).logits, atol=1e-4, rtol=1e-4)
