"""Isolated timings of the terms of Eq. (1) of arXiv 2505.22179 (the equation and its terms: ``analysis/eq1.py``).

Eq. (1) (credited to MagicDec): ``T_sd / T_t = (d * T_d / T_t + T_v(n) / T_t) / tau``, so the predicted speedup
is ``tau / (d * T_d / T_t + T_v(n) / T_t)``.

Probes (one row each, see ``COLUMNS``):

* ``T_t``: one-token decode forward of the target at context ``context`` (mask ``causal``, ``n = 1``);
* ``T_v``: one target forward over ``n`` tokens, the root included (SpecMQuant's tree size), under a ``tree``
  mask (an EAGLE-2-shaped tree of ``n - 1`` draft nodes, ``eagle_like_tree``) or a ``sequence`` (chain) mask;
* ``T_d``: one EAGLE-head forward over ``n`` rows (a draft pass over ``n`` frontier nodes, mask ``tree``;
  ``component = eagle_head``), or one decode step of a draft model (``component = draft_model``, mask
  ``causal``, ``n = 1``);
* ``prefill``: a prompt of ``n = context`` tokens into an empty cache (mask ``causal``).

Every probe first fills the model's KV cache to ``context`` tokens (a real prefill of random tokens: the values
do not matter for timing), then calls the project's ``ForwardRunner`` ``replays`` times after ``warmup`` calls, so
CUDA-graph replay is what is timed when the runner has graphs on. A T_v or T_d forward of ``n`` tokens runs a
graph of exactly ``n`` rows (column ``bucket``), as a run's verify of its drafter's size does (the registry adds
that size to the target's buckets); a prefill runs the smallest bucket >= its length. On a GPU the calls are
queued back to back with a CUDA event between consecutive calls (the host stays ahead of the GPU, so each interval
is the GPU time of one call); on a CPU each call is timed with ``perf_counter`` (a CPU forward is synchronous).
Rows report the median, 10th and 90th percentile and mean in milliseconds.

The native attention reads every slot of the static cache (``runtime.max_seq_len`` plus the runner's scratch slots),
filled or not, so a forward's cost depends on the cache size (column ``cache_slots``), not on how much of it is
filled. By default each context is probed with a cache just large enough for it, so T_t(ctx) grows with ctx as with
an attention kernel that reads only the filled length (SpecMQuant's); ``ProbeSettings.max_seq_len`` fixes one
cache size instead, to reproduce a run's costs.

The calls are timed by ``timer.time_calls``; the drafts verified are ``trees.eagle_like_tree`` / ``chain_draft``.
``specbench.analysis.eq1`` matches these rows to a run (its documented rule), recovers the same terms from a run's
``steps.parquet`` and computes Eq. (1) from either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd
import torch

from specbench.atomic import write_parquet_atomic
from specbench.config import EngineConf
from specbench.decoding.draft import Draft
from specbench.decoding.forward import DEFAULT_BUCKETS
from specbench.engine import Engine
from specbench.model.kv_cache import causal_mask, tree_mask
from specbench.timing.timer import Timing, time_calls
from specbench.timing.trees import chain_draft, eagle_like_tree

PROBES = ("T_t", "T_v", "T_d", "prefill")
MASKS = ("causal", "tree", "sequence")
COLUMNS = ["probe", "n", "mask", "context", "median_ms", "p10_ms", "p90_ms", "mean_ms", "replays", "component",
           "bucket", "cuda_graphs", "compiled", "compile_scope", "timer", "cache_slots", "model", "quant", "backend",
           "kernel", "dtype", "layers", "gpu", "device", "torch"]


def model_identity(model: torch.nn.Module, device: torch.device | str) -> dict:
    """model / quant / backend / kernel / dtype / layers / gpu / device / torch columns for ``model``."""
    from specbench.model import gemv
    from specbench.quantization import describe

    device = torch.device(device)
    summary = describe(model)["summary"]
    weight = next(model.parameters())
    dtype = str(weight.dtype).removeprefix("torch.")
    dense = summary["quant_scheme"] == "none"
    layers = getattr(getattr(model, "model", None), "layers", [])
    stacked = bool(layers)  # a decoder's q/k/v and gate/up are one linear each
    linear = "Triton GEMV at 1 row, F.linear above" if any(
        isinstance(layer.self_attn.qkv, gemv.GemvLinear) for layer in layers) else "F.linear"
    short = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(dtype, dtype)
    return {
        "model": getattr(model, "source", None) or type(model).__name__,
        "quant": short if dense else summary["quant_scheme"],
        "backend": "dense" if dense else summary["quant_backend"],
        "kernel": (linear + (" (stacked qkv, gate/up)" if stacked else "")) if dense else summary["quant_kernel"],
        "dtype": dtype,
        "layers": int(getattr(model.config, "num_hidden_layers", 0)),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "device": str(device),
        "torch": torch.__version__,
    }


@dataclass
class ProbeSettings:
    contexts: Sequence[int] = (256, 512, 1024)
    verify_sizes: Sequence[int] = (10, 20, 30, 40, 50, 60)  # n, the root included
    masks: Sequence[str] = ("tree", "sequence")
    head_rows: Sequence[int] = (1, 10)  # EAGLE draft-pass rows (1: first pass after one accepted token; k)
    prefill: bool = True
    replays: int = 100
    warmup: int = 10
    tree_depth: int = 6
    tree_topk: int = 10
    cuda_graphs: bool = True
    compile: bool = False  # torch.compile each bucket's forward before capturing it
    compile_scope: str | None = None  # as ``engine.compile_scope``
    buckets: Sequence[int] = DEFAULT_BUCKETS
    seed: int = 0
    extra: dict = field(default_factory=dict)  # more identity columns for every row
    # KV-cache size of the probed runners. The native attention reads every slot of the static cache (max_seq_len
    # plus the runner's scratch slots), filled or not, so T_t depends on the cache size, not on the fill. None: a
    # cache per context just large enough for it (T_t(ctx) then grows with ctx, like a kernel that reads only the
    # filled length); an int: one cache of that size for every context (match a run's runtime.max_seq_len).
    max_seq_len: int | None = None

    def engine(self, max_seq_len: int) -> Engine:
        """How probed modules run: graphs and compile as set here; the model's linears are as it was built."""
        execution = EngineConf(cuda_graphs=self.cuda_graphs, compile=self.compile, compile_scope=self.compile_scope,
                               gemv=False)
        return Engine(execution, max_seq_len=max_seq_len, buckets=self.buckets)

    def largest_forward(self) -> int:
        return max([*self.verify_sizes, *self.head_rows, 1])

    def cache_for(self, context: int) -> int:
        """max_seq_len of the runner that probes ``context``."""
        need = context + self.largest_forward() + 8
        if self.max_seq_len is None:
            return need
        if self.max_seq_len < need:
            raise ValueError(f"max_seq_len {self.max_seq_len} cannot hold context {context} + {self.largest_forward()}")
        return self.max_seq_len


class Prober:
    """Probes one causal LM (a target or a draft model) through a ``ModelSession`` over its own runner."""

    def __init__(self, model, settings: ProbeSettings, *, component: str = "target", identity: dict | None = None,
                 max_seq_len: int | None = None):
        self.settings = settings
        size = max_seq_len or settings.cache_for(max(settings.contexts, default=0))
        self.session = settings.engine(size).session(model)
        self.runner = self.session.runner
        self.device = self.runner.device
        self.vocab = model.config.vocab_size
        self.component = component
        self.identity = {**(identity or model_identity(model, self.device)), **settings.extra}
        g = torch.Generator().manual_seed(settings.seed)
        self.ids = torch.randint(0, self.vocab, (size,), generator=g).tolist()

    # ----- plumbing

    def row(self, probe: str, n: int, mask: str, context: int, timing: Timing, bucket: int | None) -> dict:
        return {"probe": probe, "n": n, "mask": mask, "context": context, "median_ms": timing.median_ms,
                "p10_ms": timing.p10_ms, "p90_ms": timing.p90_ms, "mean_ms": timing.mean_ms,
                "replays": timing.replays, "component": self.component, "bucket": bucket,
                "cuda_graphs": bool(self.runner.cuda_graphs and bucket is not None),
                "compiled": self.runner.compiled, "compile_scope": self.runner.compile_scope, "timer": timing.timer,
                "cache_slots": self.runner.total_slots, **self.identity}

    @torch.inference_mode()
    def set_context(self, context: int) -> None:
        """Fill the KV cache with ``context`` tokens (a real prefill; the values do not matter)."""
        if context + 1 > self.runner.max_seq_len:
            raise ValueError(f"context {context} does not fit max_seq_len {self.runner.max_seq_len}")
        self.session.reset()
        if context:
            self.session.extend(self.ids[:context])

    def verify_inputs(self, draft: Draft) -> tuple[tuple[torch.Tensor, ...], int | None]:
        """The runner inputs of ``session.verify(root, draft)`` after the current prefix, and the CUDA-graph
        bucket they run at: exactly their size (``exact_bucket``), so each timed call is the copies and the replay."""
        start, n, dev = self.session.length, len(draft) + 1, self.device
        if start + n > self.runner.max_seq_len:
            raise ValueError(f"context {start} + {n} tokens exceed max_seq_len {self.runner.max_seq_len}")
        ids = torch.tensor(self.ids[start : start + 1] + draft.tokens, device=dev)
        positions = torch.tensor([0] + draft.depths, device=dev) + start
        slots = torch.arange(start, start + n, device=dev)
        mask = tree_mask(start, draft.ancestors(dev), self.runner.total_slots)
        return (ids, positions, slots, mask), exact_bucket(self.runner, n)

    def _time(self, fn) -> Timing:
        s = self.settings
        with torch.inference_mode():
            return time_calls(fn, self.device, replays=s.replays, warmup=s.warmup)

    # ----- probes

    def forward(self, draft: Draft, context: int, probe: str, mask: str) -> dict:
        """One forward over root + ``draft`` at ``context`` (the cache is filled first)."""
        self.set_context(context)
        inputs, bucket = self.verify_inputs(draft)
        timing = self._time(lambda: self.runner(*inputs))
        return self.row(probe, len(draft) + 1, mask, context, timing, bucket)

    def decode(self, context: int, probe: str = "T_t") -> dict:
        return self.forward(Draft.empty(), context, probe, "causal")

    def verify(self, n: int, context: int, mask: str = "tree") -> dict:
        s = self.settings
        if mask == "tree":
            draft = eagle_like_tree(n, depth=s.tree_depth, topk=s.tree_topk, vocab_size=self.vocab, seed=s.seed)
        elif mask == "sequence":
            draft = chain_draft(n, vocab_size=self.vocab, seed=s.seed)
        else:
            raise ValueError(f"verify mask is 'tree' or 'sequence', not {mask!r}")
        return self.forward(draft, context, "T_v", mask)

    def prefill(self, context: int) -> dict:
        """A prompt of ``context`` tokens into an empty cache (the cache ends filled to ``context``)."""
        ids = self.ids[:context]

        def call():
            self.session.reset()
            self.session.extend(ids)

        timing = self._time(call)
        bucket = self.runner.bucket(context) if self.runner.cuda_graphs else None
        return self.row("prefill", context, "causal", context, timing, bucket)


class HeadProber:
    """Probes an EAGLE head's draft pass: ``rows`` frontier nodes at one tree level, after ``context`` pairs."""

    def __init__(self, head, settings: ProbeSettings, *, name: str | None = None, max_seq_len: int | None = None):
        self.settings = settings
        size = max_seq_len or settings.cache_for(max(settings.contexts, default=0))
        # as EagleDrafter sizes its head's cache: the target's plus room for the tree's frontier nodes
        self.runner = settings.engine(size + settings.tree_depth * settings.tree_topk).runner(head)
        self.head = head
        self.device = self.runner.device
        self.hidden = head.config.hidden_size
        self.dtype = head.fc.weight.dtype
        self.vocab = head.config.vocab_size
        base = model_identity(head, self.device)
        self.identity = {**base, "model": f"eagle_head({name or base['model']})", **settings.extra}

    @torch.inference_mode()
    def set_context(self, context: int) -> None:
        """Feed ``context`` (feature, token) pairs through the head so its cache holds them."""
        dev, g = self.device, torch.Generator(device=self.device).manual_seed(self.settings.seed)
        for start in range(0, context, 4096):
            m = min(4096, context - start)
            ids = torch.randint(0, self.vocab, (m,), device=dev, generator=g)
            pos = torch.arange(start, start + m, device=dev)
            feats = torch.randn(m, self.hidden, device=dev, generator=g).to(self.dtype)
            mask = causal_mask(start, m, self.runner.total_slots, dev)
            self.head(ids[None], pos, pos, mask, features=feats[None])

    def draft_pass(self, rows: int, context: int) -> dict:
        """One head forward over ``rows`` nodes of a tree level (logits over the full vocabulary for each row)."""
        self.set_context(context)
        dev, start = self.device, context
        g = torch.Generator(device=dev).manual_seed(self.settings.seed + 1)
        ids = torch.randint(0, self.vocab, (rows,), device=dev, generator=g)
        positions = torch.full((rows,), context, device=dev)
        slots = torch.arange(start, start + rows, device=dev)
        mask = torch.zeros(rows, self.runner.total_slots, dtype=torch.bool, device=dev)
        mask[:, :context] = True
        mask[torch.arange(rows, device=dev), slots] = True
        features = torch.randn(rows, self.hidden, device=dev, generator=g).to(self.dtype)
        bucket = exact_bucket(self.runner, rows)
        mask4 = mask[None, None]
        with torch.inference_mode():
            timing = time_calls(lambda: self.runner(ids, positions, slots, mask4, features=features), dev,
                                replays=self.settings.replays, warmup=self.settings.warmup)
        return {"probe": "T_d", "n": rows, "mask": "tree", "context": context, "median_ms": timing.median_ms,
                "p10_ms": timing.p10_ms, "p90_ms": timing.p90_ms, "mean_ms": timing.mean_ms,
                "replays": timing.replays, "component": "eagle_head", "bucket": bucket,
                "cuda_graphs": bool(self.runner.cuda_graphs and bucket is not None),
                "compiled": self.runner.compiled, "compile_scope": self.runner.compile_scope, "timer": timing.timer,
                "cache_slots": self.runner.total_slots, **self.identity}


def exact_bucket(runner, n: int) -> int | None:
    """The graph bucket a probe of ``n`` rows runs at: ``n`` itself (added to the runner's buckets), or None when
    the runner replays no graph for it (no CUDA graphs, or more rows than its largest bucket: eager)."""
    if n <= runner.scratch:
        runner.add_bucket(n)
    return runner.bucket(n) if runner.cuda_graphs else None


def run_probes(target, settings: ProbeSettings | None = None, *, head=None, draft_model=None,
               identity: dict | None = None, log: Callable[[str], None] | None = None) -> pd.DataFrame:
    """All probes for ``target`` (and an EAGLE ``head`` / a ``draft_model`` when given), one row each.

    For every context: prefill, T_t, T_v(n) for each n and mask, T_d of the head for each ``head_rows`` and one
    decode step of the draft model.
    """
    s = settings or ProbeSettings()
    say = log or (lambda _msg: None)
    rows = []

    def per_context(make, probe_one):
        """One prober for all contexts (fixed cache size) or one per context (a cache sized for it)."""
        shared = make(s.max_seq_len) if s.max_seq_len is not None else None
        for context in s.contexts:
            prober = shared or make(s.cache_for(context))
            probe_one(prober, context)
            if shared is None:
                del prober
                _free(target)
        return shared

    def target_probes(prober, context):
        if s.prefill:
            rows.append(prober.prefill(context))
        decode = prober.decode(context)
        verifies = [prober.verify(n, context, mask) for mask in s.masks for n in s.verify_sizes]
        rows.extend([decode, *verifies])
        t_t = decode["median_ms"]
        say(f"  context {context}: T_t {t_t:.3f} ms; " + ", ".join(
            f"T_v({r['n']},{r['mask'][0]}) x{r['median_ms'] / t_t:.2f}" for r in verifies))

    name = getattr(target, "source", None) or type(target).__name__
    if identity is not None:
        name = identity.get("model", name)
    per_context(lambda size: Prober(target, s, identity=identity, max_seq_len=size), target_probes)
    if head is not None:
        per_context(lambda size: HeadProber(head, s, name=name, max_seq_len=size),
                    lambda hp, context: rows.extend(hp.draft_pass(k, context) for k in s.head_rows))
    if draft_model is not None:
        per_context(lambda size: Prober(draft_model, s, component="draft_model", max_seq_len=size),
                    lambda dp, context: rows.append(dp.decode(context, probe="T_d")))
    _free(target)
    frame = pd.DataFrame(rows)
    return frame[[c for c in COLUMNS if c in frame] + [c for c in frame if c not in COLUMNS]]


def write_probes(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write probe rows to ``path`` (a ``.parquet`` file, or a folder that gets ``probes.parquet``)."""
    path = Path(path)
    if path.suffix != ".parquet":
        path = path / "probes.parquet"
    write_parquet_atomic(frame, path)
    return path


def _free(model) -> None:
    if next(model.parameters()).device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
