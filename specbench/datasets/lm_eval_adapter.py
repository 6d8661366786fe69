"""A thin lm-evaluation-harness ``LM`` over any specbench model, for accuracy suites (MMLU-Pro, GPQA, MATH-500...).

The model is reached only through callables, so this module does not depend on how it is built or quantized:

* ``logits_fn(ids)``: a ``[1, n]`` LongTensor -> ``[1, n, vocab]`` logits (a full forward, no cache);
* ``generate_fn(prompt_ids, max_new_tokens, stop_token_ids)`` -> new token ids (optional; a speculative
  decoder plugs in here). Without it, ``generate_until`` decodes greedily through ``logits_fn``.

``lm_eval`` is imported only by ``as_lm_eval`` (``pip install 'specbench[eval]'``).
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch

from specbench.datasets.prompting import stop_token_ids

LogitsFn = Callable[[torch.Tensor], torch.Tensor]
GenerateFn = Callable[[list[int], int, list[int]], list[int]]


def native_logits_fn(model) -> LogitsFn:
    """``logits_fn`` for a ``specbench.model.Transformer``: prefill the whole sequence into a fresh cache."""
    from specbench.model import causal_mask

    @torch.no_grad()
    def run(ids: torch.Tensor) -> torch.Tensor:
        n = ids.shape[1]
        model.setup_cache(n)
        pos = torch.arange(n, device=ids.device)
        return model.logits(model(ids, pos, pos, causal_mask(0, n, n, ids.device)))

    return run


def _args(request) -> tuple:
    return request.args if hasattr(request, "args") else tuple(request)


class SpecbenchEvalModel:
    """lm-eval's three request types over a tokenizer and a ``logits_fn`` (requests: ``Instance`` or tuples).

    ``max_length`` bounds every forward (context + continuation or generation); ``max_gen_toks`` is the default
    generation budget when a request does not set one.
    """

    def __init__(self, tokenizer, logits_fn: LogitsFn, generate_fn: GenerateFn | None = None, *,
                 max_length: int = 4096, max_gen_toks: int = 256, device: str | torch.device = "cpu",
                 chat_template_kwargs: dict | None = None):
        self.tokenizer = tokenizer
        self.logits_fn = logits_fn
        self.generate_fn = generate_fn
        self.max_length = max_length
        self.max_gen_toks = max_gen_toks
        self.device = torch.device(device)
        self.chat_template_kwargs = chat_template_kwargs or {}
        bos = tokenizer.bos_token_id
        self.prefix_token_id: int = bos if bos is not None else tokenizer.eos_token_id  # context of empty contexts

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def _score(self, tokens: Sequence[int], n_scored: int) -> tuple[float, bool]:
        """Sum of log-probs of the last ``n_scored`` of ``tokens`` given the ones before, and whether each is argmax."""
        inputs = torch.tensor([list(tokens[:-1])], device=self.device)
        logprobs = torch.log_softmax(self.logits_fn(inputs)[0, -n_scored:].float(), dim=-1)
        target = torch.tensor(tokens[-n_scored:], device=self.device)
        picked = logprobs.gather(-1, target[:, None])[:, 0]
        return float(picked.sum()), bool((logprobs.argmax(-1) == target).all())

    def loglikelihood(self, requests) -> list[tuple[float, bool]]:
        """log P(continuation | context); trailing spaces of the context move to the continuation."""
        results = []
        for context, continuation in map(_args, requests):
            spaces = len(context) - len(context.rstrip())
            context, continuation = context[: len(context) - spaces], context[len(context) - spaces:] + continuation
            context_ids = self.encode(context) if context else [self.prefix_token_id]
            whole = self.encode(context + continuation) if context else context_ids + self.encode(continuation)
            n = len(whole) - len(context_ids)
            if n <= 0:
                raise ValueError(f"empty continuation after tokenization: {continuation!r}")
            tokens = whole[-(self.max_length + 1):]
            results.append(self._score(tokens, min(n, len(tokens) - 1)))
        return results

    def loglikelihood_rolling(self, requests) -> list[float]:
        """log P(text | prefix token) in windows of ``max_length`` predictions; each token is scored once and the
        last window is given a full context."""
        results = []
        for (text,) in map(_args, requests):
            seq = [self.prefix_token_id] + self.encode(text)
            total = 0.0
            for start in range(0, len(seq) - 1, self.max_length):
                end = min(start + self.max_length, len(seq) - 1)
                first = max(0, end - self.max_length)
                total += self._score(seq[first : end + 1], end - start)[0]
            results.append(total)
        return results

    def generate_until(self, requests) -> list[str]:
        """Greedy continuation of each context, cut at the first of ``gen_kwargs['until']`` strings.

        Prompt plus generation fit in ``max_length``: the context keeps its last ``max_length - 1`` tokens and
        ``max_gen_toks`` is lowered to the room left.
        """
        outputs = []
        stop_ids = stop_token_ids(self.tokenizer)
        for context, gen_kwargs in map(_args, requests):
            until = gen_kwargs.get("until") or []
            until = [until] if isinstance(until, str) else list(until)
            ids = self.encode(context)[-(self.max_length - 1):]
            budget = min(int(gen_kwargs.get("max_gen_toks", self.max_gen_toks)), self.max_length - len(ids))
            new = (self.generate_fn or self._greedy)(ids, budget, stop_ids)
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            for stop in until:
                text = text.split(stop, 1)[0]
            outputs.append(text)
        return outputs

    def _greedy(self, ids: list[int], max_new_tokens: int, stop_ids: list[int]) -> list[int]:
        new: list[int] = []
        for _ in range(max_new_tokens):
            token = int(self.logits_fn(torch.tensor([ids + new], device=self.device))[0, -1].argmax())
            if token in stop_ids:
                break
            new.append(token)
        return new

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """Render lm-eval's chat history with the tokenizer's template (plus ``chat_template_kwargs``, e.g.
        ``{"enable_thinking": False}`` for Qwen3)."""
        return self.tokenizer.apply_chat_template(chat_history, add_generation_prompt=add_generation_prompt,
                                                  tokenize=False, **self.chat_template_kwargs)

    @property
    def tokenizer_name(self) -> str:
        return getattr(self.tokenizer, "name_or_path", "specbench").replace("/", "__")


def as_lm_eval(model: SpecbenchEvalModel):
    """Wrap ``model`` in a subclass of ``lm_eval.api.model.LM`` for ``lm_eval.simple_evaluate(model=...)``."""
    try:
        from lm_eval.api.model import LM
    except ImportError as err:
        raise ImportError("the lm-evaluation-harness adapter needs lm_eval: pip install 'specbench[eval]' "
                          "(or pip install lm-eval)") from err

    class SpecbenchLM(LM):
        def __init__(self):
            super().__init__()
            self.inner = model

        def loglikelihood(self, requests, disable_tqdm: bool = False):
            return self.inner.loglikelihood(requests)

        def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
            return self.inner.loglikelihood_rolling(requests)

        def generate_until(self, requests, disable_tqdm: bool = False):
            return self.inner.generate_until(requests)

        def apply_chat_template(self, chat_history, add_generation_prompt=True):
            return self.inner.apply_chat_template(chat_history, add_generation_prompt)

        @property
        def tokenizer_name(self) -> str:
            return self.inner.tokenizer_name

    return SpecbenchLM()
