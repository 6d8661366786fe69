"""Turn a ``Question`` into model input: chat templates with multi-turn history, GSM8K 8-shot, HumanEval.

Styles (``DatasetSpec.prompt_style``):

* ``chat``: ``tokenizer.apply_chat_template`` over the previous turns and the model's previous answers, with an
  optional system prompt and Qwen3's ``enable_thinking``; tokenizers without a template get a plain
  ``User: / Assistant:`` transcript.
* ``gsm8k_8shot``: raw text ``Q: ... A: ... The answer is N.`` x 8 then the question, no chat template and no
  terminators (as in SpecMQuant, so every sample runs to ``max_new_tokens``).
* ``humaneval``: a chat turn asking for a self-contained Python script in a markdown block, with the assistant
  turn pre-filled up to an opening ```` ```python ```` fence (evalplus style).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Sequence

from specbench.datasets.questions import Question, read_rows

LLAMA2_SYSTEM_PROMPT = (
    "You are a helpful, respectful and honest assistant. Always answer as helpfully as possible, while being safe. "
    "Your answers should not include any harmful, unethical, racist, sexist, toxic, dangerous, or illegal content. "
    "Please ensure that your responses are socially unbiased and positive in nature.\n\n"
    "If a question does not make any sense, or is not factually coherent, explain why instead of answering "
    "something not correct. If you don't know the answer to a question, please don't share false information."
)
SYSTEM_PROMPTS = {"none": None, "llama2": LLAMA2_SYSTEM_PROMPT}
END_OF_TURN_TOKENS = ("<|eot_id|>", "<|im_end|>")
HUMANEVAL_INSTRUCTION = (
    "Write a self-contained Python script that solves the problem below. Put the whole script in one markdown "
    "code block."
)
HUMANEVAL_RESPONSE = "Here is a self-contained Python script that solves the problem:"
STYLES = ("chat", "gsm8k_8shot", "humaneval")


@dataclass
class Prompt:
    """Model input for one turn. ``text`` ends with ``response_prefix`` (pre-filled assistant text, if any);
    generation stops at any of ``stop_token_ids`` or, for plain transcripts, ``stop_strings``."""

    text: str
    input_ids: list[int]
    stop_token_ids: list[int]
    response_prefix: str = ""
    stop_strings: list[str] = field(default_factory=list)


def resolve_system_prompt(value: str | None) -> str | None:
    """A preset name from ``SYSTEM_PROMPTS`` (``llama2`` is SpecMQuant's Llama-3 prompt) or literal text."""
    return SYSTEM_PROMPTS.get(value, value) if value is not None else None


def stop_token_ids(tokenizer) -> list[int]:
    """The tokenizer's eos plus whichever end-of-turn tokens it has (Llama-3 ``<|eot_id|>``, Qwen ``<|im_end|>``)."""
    vocab = tokenizer.get_vocab()
    ids = [tokenizer.eos_token_id] + [vocab[t] for t in END_OF_TURN_TOKENS if t in vocab]
    return list(dict.fromkeys(i for i in ids if i is not None))


def chat_messages(turns: Sequence[str], answers: Sequence[str], turn: int, system_prompt: str | None = None
                  ) -> list[dict[str, str]]:
    """Messages for user turn ``turn``: system prompt, then each earlier turn with the model's answer to it."""
    if not 0 <= turn < len(turns):
        raise IndexError(f"turn {turn} out of range for a question with {len(turns)} turns")
    if len(answers) < turn:
        raise ValueError(f"turn {turn} needs the model's answers to the {turn} earlier turns, got {len(answers)}")
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    for user, assistant in zip(turns[:turn], answers[:turn]):
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return messages + [{"role": "user", "content": turns[turn]}]


def plain_transcript(messages: Sequence[dict[str, str]]) -> str:
    """Fallback for tokenizers without a chat template: ``User: ...`` / ``Assistant: ...`` blocks."""
    names = {"user": "User", "assistant": "Assistant"}
    parts = [m["content"] if m["role"] == "system" else f"{names[m['role']]}: {m['content']}" for m in messages]
    return "\n\n".join(parts + ["Assistant:"])


def render_chat(tokenizer, messages: Sequence[dict[str, str]], enable_thinking: bool | None = None
                ) -> tuple[str, bool]:
    """The prompt text for ``messages`` with a generation prompt, and whether encoding must add special tokens
    (False for chat templates, which write their own BOS)."""
    if not getattr(tokenizer, "chat_template", None):
        return plain_transcript(messages), True
    extra = {} if enable_thinking is None else {"enable_thinking": enable_thinking}
    return tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False, **extra), False


@lru_cache(maxsize=1)
def gsm8k_exemplars() -> tuple[dict, ...]:
    """The 8 worked examples shipped in ``data/gsm8k_8shot.jsonl`` (written for specbench)."""
    return tuple(read_rows(str(resources.files("specbench.datasets").joinpath("data", "gsm8k_8shot.jsonl"))))


def gsm8k_fewshot_prompt(question: str, shots: int = 8) -> str:
    """``Q: <question>\\nA: <reasoning> The answer is N.`` for each exemplar, then ``Q: <question>\\nA:``."""
    shots_text = [f"Q: {e['question']}\nA: {e['rationale']} The answer is {e['answer']}."
                  for e in gsm8k_exemplars()[:shots]]
    return "\n\n".join(shots_text + [f"Q: {question}\nA:"])


def build_prompt(
    tokenizer,
    question: Question,
    turn: int = 0,
    answers: Sequence[str] = (),
    *,
    style: str = "chat",
    system_prompt: str | None = None,
    enable_thinking: bool | None = None,
) -> Prompt:
    """Token ids for user turn ``turn`` of ``question``, given the model's ``answers`` to the earlier turns.

    ``system_prompt`` is a ``SYSTEM_PROMPTS`` name or text; ``enable_thinking`` goes to the chat template (Qwen3).
    """
    if style not in STYLES:
        raise ValueError(f"unknown prompt style {style!r}; choose from {STYLES}")
    if style != "chat" and turn != 0:
        raise ValueError(f"prompt style {style!r} has a single turn")
    system = resolve_system_prompt(system_prompt)
    if style == "gsm8k_8shot":
        text = gsm8k_fewshot_prompt(question.turns[0])
        return Prompt(text, tokenizer(text, add_special_tokens=True).input_ids, [])
    prefix = ""
    if style == "humaneval":
        content = f"{HUMANEVAL_INSTRUCTION}\n\n```python\n{question.turns[0].strip()}\n```"
        messages = chat_messages([content], [], 0, system)
        prefix = f"{HUMANEVAL_RESPONSE}\n```python\n"
    else:
        messages = chat_messages(question.turns, answers, turn, system)
    text, add_special = render_chat(tokenizer, messages, enable_thinking)
    text += (" " if prefix and add_special else "") + prefix
    ids = tokenizer(text, add_special_tokens=add_special).input_ids
    return Prompt(text, ids, stop_token_ids(tokenizer), prefix, ["\nUser:"] if add_special else [])
