"""Prompt construction against chat templates built in the tests (Llama-3, Qwen3, none)."""

from __future__ import annotations

import re

import pytest

from specbench.datasets.prompting import (
    HUMANEVAL_RESPONSE, LLAMA2_SYSTEM_PROMPT, build_prompt, chat_messages, gsm8k_fewshot_prompt, stop_token_ids,
)
from specbench.datasets.questions import Question
from specbench.datasets.scoring import extract_gsm8k_answer
from tests.tokenizers_for_tests import llama3_tokenizer, plain_tokenizer, qwen3_tokenizer

MT = Question(81, "writing", ["Write a haiku about tests.", "Now make it rhyme."])


@pytest.fixture(scope="module")
def llama3():
    return llama3_tokenizer()


@pytest.fixture(scope="module")
def qwen3():
    return qwen3_tokenizer()


def reference_ids(tok, messages, **kw):
    return tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False, **kw)


def test_llama3_second_turn_matches_template_and_documented_format(llama3):
    prompt = build_prompt(llama3, MT, 1, ["Green bar glows."], system_prompt="llama2")
    messages = chat_messages(MT.turns, ["Green bar glows."], 1, LLAMA2_SYSTEM_PROMPT)
    assert prompt.input_ids == reference_ids(llama3, messages)
    expected = (
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n" + LLAMA2_SYSTEM_PROMPT + "<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nWrite a haiku about tests.<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nGreen bar glows.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nNow make it rhyme.<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    assert prompt.text == expected
    assert prompt.input_ids.count(llama3.bos_token_id) == 1 and prompt.input_ids[0] == llama3.bos_token_id


def test_llama2_system_prompt_is_the_standard_text():
    assert LLAMA2_SYSTEM_PROMPT.startswith("You are a helpful, respectful and honest assistant.")
    assert LLAMA2_SYSTEM_PROMPT.endswith("please don't share false information.")
    assert "\n\nIf a question does not make any sense" in LLAMA2_SYSTEM_PROMPT


def test_first_turn_has_no_history_and_custom_system_text(llama3):
    prompt = build_prompt(llama3, MT, 0, system_prompt="Be brief.")
    assert prompt.text.count("<|start_header_id|>user") == 1 and "Now make it rhyme" not in prompt.text
    assert "system<|end_header_id|>\n\nBe brief.<|eot_id|>" in prompt.text
    assert "system" not in build_prompt(llama3, MT, 0).text


def test_terminators(llama3):
    assert stop_token_ids(llama3) == [llama3.convert_tokens_to_ids("<|end_of_text|>"),
                                      llama3.convert_tokens_to_ids("<|eot_id|>")]
    qwen = qwen3_tokenizer()
    endoftext, im_end = qwen.convert_tokens_to_ids(["<|endoftext|>", "<|im_end|>"])
    assert stop_token_ids(qwen) == [endoftext, im_end]
    assert stop_token_ids(qwen3_tokenizer(eos="<|im_end|>")) == [im_end]
    assert build_prompt(llama3, MT).stop_token_ids == stop_token_ids(llama3)


@pytest.mark.parametrize("thinking", [None, True, False])
def test_qwen3_thinking_toggle_matches_template(qwen3, thinking):
    answers = ["<think>\nplan\n</think>\n\nRed bar."]
    prompt = build_prompt(qwen3, MT, 1, answers, enable_thinking=thinking)
    kw = {} if thinking is None else {"enable_thinking": thinking}
    assert prompt.input_ids == reference_ids(qwen3, chat_messages(MT.turns, answers, 1), **kw)
    assert prompt.text.startswith("<|im_start|>user\nWrite a haiku about tests.<|im_end|>\n"
                                  "<|im_start|>assistant\nRed bar.<|im_end|>\n<|im_start|>user\n")
    empty_think = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert prompt.text.endswith(empty_think) == (thinking is False)
    assert prompt.text.endswith("<|im_start|>assistant\n") == (thinking is not False)


def test_turn_needs_previous_answers(llama3):
    with pytest.raises(ValueError, match="needs the model's answers"):
        build_prompt(llama3, MT, 1, [])
    with pytest.raises(IndexError):
        build_prompt(llama3, MT, 2, ["a", "b"])


def test_plain_fallback_without_chat_template():
    tok = plain_tokenizer()
    prompt = build_prompt(tok, MT, 1, ["Green bar."], system_prompt="Be brief.")
    assert prompt.text == "Be brief.\n\nUser: Write a haiku about tests.\n\nAssistant: Green bar.\n\n" \
                          "User: Now make it rhyme.\n\nAssistant:"
    assert prompt.input_ids[0] == tok.bos_token_id and tok.decode(prompt.input_ids[1:]) == prompt.text
    assert prompt.stop_token_ids == [tok.eos_token_id] and prompt.stop_strings == ["\nUser:"]


def test_gsm8k_eight_shot_raw_text(llama3):
    q = Question(0, "gsm8k", ["Ann has 3 apples and buys 4 more. How many apples does she have?"])
    prompt = build_prompt(llama3, q, style="gsm8k_8shot", system_prompt="llama2")
    shots = prompt.text.split("\n\n")
    assert len(shots) == 9 and prompt.text.endswith("Q: " + q.turns[0] + "\nA:")
    for shot in shots[:8]:
        assert shot.startswith("Q: ") and "\nA: " in shot and shot.endswith(".")
        assert extract_gsm8k_answer(shot.split("\nA: ")[1]) is not None
    assert "<|start_header_id|>" not in prompt.text and LLAMA2_SYSTEM_PROMPT not in prompt.text
    assert prompt.stop_token_ids == []  # SpecMQuant: no terminators, every sample runs to max_new_tokens
    assert prompt.input_ids[0] == llama3.bos_token_id and llama3.decode(prompt.input_ids[1:]) == prompt.text
    assert gsm8k_fewshot_prompt("x", shots=2).count("Q: ") == 3


def test_fewshot_exemplar_answers_are_right():
    for shot in gsm8k_fewshot_prompt("x").split("\n\n")[:8]:
        reasoning = shot.split("\nA: ")[1]
        steps = re.findall(r"((?:\d+(?:\.\d+)? [-+*/] )+\d+(?:\.\d+)?) = (\d+(?:\.\d+)?)", reasoning)
        assert steps, shot
        for expression, result in steps:  # every "a op b ... = c" step holds
            assert eval(expression) == float(result), shot
        assert extract_gsm8k_answer(reasoning) == steps[-1][1], shot


def test_humaneval_prefills_a_python_fence(qwen3):
    q = Question("HumanEval/0", "humaneval", ["def add(a, b):\n    \"\"\"Add.\"\"\"\n"], entry_point="add")
    prompt = build_prompt(qwen3, q, style="humaneval", enable_thinking=False)
    assert prompt.response_prefix == HUMANEVAL_RESPONSE + "\n```python\n"
    assert prompt.text.endswith("<think>\n\n</think>\n\n" + prompt.response_prefix)
    user = prompt.text.split("<|im_start|>user\n")[1].split("<|im_end|>")[0]
    assert "self-contained Python script" in user and "markdown code block" in user
    assert "```python\ndef add(a, b):\n    \"\"\"Add.\"\"\"\n```" in user
    assert qwen3.decode(prompt.input_ids) == prompt.text
    plain = build_prompt(plain_tokenizer(), q, style="humaneval")
    assert plain.text.endswith("Assistant: " + prompt.response_prefix)


def test_unknown_style_and_multi_turn_fewshot_are_rejected(llama3):
    with pytest.raises(ValueError, match="unknown prompt style"):
        build_prompt(llama3, MT, style="alpaca")
    with pytest.raises(ValueError, match="single turn"):
        build_prompt(llama3, MT, 1, ["a"], style="gsm8k_8shot")
