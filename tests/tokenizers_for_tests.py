"""Small byte-level tokenizers with Llama-3 / Qwen3 special tokens and chat templates, built offline for tests.

The vocabulary is the 256 byte symbols (no merges), so any text round-trips; special tokens are added on top.
The chat templates are written from the documented formats, not copied from the model repos.
"""

from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

LLAMA3_TEMPLATE = (
    "{{ bos_token }}"
    "{% for m in messages %}"
    "{{ '<|start_header_id|>' + m.role + '<|end_header_id|>\\n\\n' + (m.content | trim) + '<|eot_id|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"
)

QWEN3_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m.role == 'assistant' %}{% set content = m.content.split('</think>')[-1].lstrip('\\n') %}"
    "{% else %}{% set content = m.content %}{% endif %}"
    "{{ '<|im_start|>' + m.role + '\\n' + content + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% if enable_thinking is defined and enable_thinking is false %}{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}"
    "{% endif %}"
)


def byte_tokenizer(special: list[str], bos: str | None = None) -> Tokenizer:
    """A byte-level BPE with no merges plus ``special`` tokens; ``bos`` is prepended when special tokens are added."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: i for i, symbol in enumerate(sorted(alphabet))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(special)
    if bos:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))])
    return tok


def llama3_tokenizer() -> PreTrainedTokenizerFast:
    """Llama-3-Instruct layout: BOS ``<|begin_of_text|>``, EOS ``<|end_of_text|>``, end of turn ``<|eot_id|>``."""
    special = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    return PreTrainedTokenizerFast(tokenizer_object=byte_tokenizer(special, bos="<|begin_of_text|>"),
                                   bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>",
                                   chat_template=LLAMA3_TEMPLATE)


def qwen3_tokenizer(eos: str = "<|endoftext|>") -> PreTrainedTokenizerFast:
    """Qwen3 layout: no BOS, ``<|im_start|>``/``<|im_end|>`` turns, ``<think>`` tokens; EOS ``eos``."""
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
    return PreTrainedTokenizerFast(tokenizer_object=byte_tokenizer(special), eos_token=eos,
                                   pad_token="<|endoftext|>", chat_template=QWEN3_TEMPLATE)


def plain_tokenizer() -> PreTrainedTokenizerFast:
    """A tokenizer with BOS/EOS but no chat template (like a base model's)."""
    return PreTrainedTokenizerFast(tokenizer_object=byte_tokenizer(["<s>", "</s>"], bos="<s>"),
                                   bos_token="<s>", eos_token="</s>")
