"""Isolated timings of the terms of Eq. (1) of arXiv 2505.22179, and the same terms recovered from a run.

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
CUDA-graph replay is what is timed when the runner has graphs on. A forward of ``n`` tokens runs the graph of the
smallest bucket >= n (column ``bucket``), exactly as decoding does. On a GPU the calls are queued back to back
with a CUDA event between consecutive calls (the host stays ahead of the GPU, so each interval is the GPU time of
one call); on a CPU each call is timed with ``perf_counter`` (a CPU forward is synchronous). Rows report the
median, 10th and 90th percentile and mean in milliseconds.

The native attention reads every slot of the static cache (``runtime.max_seq_len`` plus the runner's scratch slots),
filled or not, so a forward's cost depends on the cache size (column ``cache_slots``), not on how much of it is
filled. By default each context is probed with a cache just large enough for it, so T_t(ctx) grows with ctx as with
an attention kernel that reads only the filled length (SpecMQuant's); ``ProbeSettings.max_seq_len`` fixes one
cache size instead, to reproduce a run's costs.

``effective_terms`` / ``eq1_report`` recover the same terms from a run's ``steps.parquet`` (per-step phase times
from ``specbench.decoding.phases``) and set Eq. (1)'s prediction next to the measured speedup.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch

from specbench.atomic import write_parquet_atomic
from specbench.decoding.draft import Draft
from specbench.decoding.forward import DEFAULT_BUCKETS, ForwardRunner
from specbench.decoding.session import ModelSession
from specbench.model.kv_cache import causal_mask, tree_mask

PROBES = ("T_t", "T_v", "T_d", "prefill")
MASKS = ("causal", "tree", "sequence")
COLUMNS = ["probe", "n", "mask", "context", "median_ms", "p10_ms", "p90_ms", "mean_ms", "replays", "component",
           "bucket", "cuda_graphs", "compiled", "timer", "cache_slots", "model", "quant", "backend", "kernel", "dtype",
           "layers", "gpu", "device", "torch"]


# --------------------------------------------------------------------------------------------- timing


@dataclass
class Timing:
    median_ms: float
    p10_ms: float
    p90_ms: float
    mean_ms: float
    replays: int
    timer: str

    @classmethod
    def of(cls, samples_ms: Sequence[float], timer: str) -> "Timing":
        a = np.asarray(samples_ms, dtype=np.float64)
        p10, med, p90 = np.percentile(a, [10, 50, 90])
        return cls(float(med), float(p10), float(p90), float(a.mean()), int(a.size), timer)


def time_calls(fn: Callable[[], object], device: torch.device | str, *, replays: int = 100, warmup: int = 10) -> Timing:
    """Time ``replays`` calls of ``fn`` after ``warmup`` untimed ones.

    CUDA: the calls are queued back to back with an event recorded after each, and call i's time is the interval
    between events i and i+1 (GPU time, as long as the host enqueues faster than the GPU runs). CPU: perf_counter
    around each call.
    """
    if replays < 1:
        raise ValueError("replays must be >= 1")
    device = torch.device(device)
    for _ in range(warmup):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        events = [torch.cuda.Event(enable_timing=True) for _ in range(replays + 1)]
        events[0].record()
        for i in range(replays):
            fn()
            events[i + 1].record()
        events[-1].synchronize()
        samples = [events[i].elapsed_time(events[i + 1]) for i in range(replays)]
        return Timing.of(samples, "cuda_events")
    samples = []
    for _ in range(replays):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return Timing.of(samples, "perf_counter")


# --------------------------------------------------------------------------------------------- drafts


def level_widths(nodes: int, depth: int, topk: int) -> list[int]:
    """How many of ``nodes`` draft nodes sit at each depth 1..depth of an EAGLE-2-shaped tree.

    EAGLE-2 keeps the best candidates by cumulative log-probability, so shallow levels hold more nodes: level L
    gets a share proportional to ``depth - L + 1``, at least one node while nodes remain, and at most ``topk``
    children per node of the level above (``topk`` at level 1).
    """
    if nodes < 0 or depth < 1 or topk < 1:
        raise ValueError("need nodes >= 0, depth >= 1, topk >= 1")
    depth = min(depth, nodes) if nodes else 0
    if depth == 0:
        return []
    weights = [depth - level for level in range(depth)]
    widths = [1] * depth
    left = nodes - depth
    total = sum(weights)
    for level in range(depth):  # proportional shares of what is left, floored
        widths[level] += int(left * weights[level] / total)
    level = 0
    while sum(widths) < nodes:  # hand out the remainder, shallow levels first
        widths[level % depth] += 1
        level += 1
    for level in range(depth):  # respect topk children per parent; push overflow deeper (or shallower)
        cap = topk if level == 0 else topk * widths[level - 1]
        if widths[level] > cap:
            over, widths[level] = widths[level] - cap, cap
            nxt = level + 1 if level + 1 < depth else None
            if nxt is None:
                raise ValueError(f"{nodes} nodes do not fit a tree of depth {depth} with topk {topk}")
            widths[nxt] += over
    return widths


def eagle_like_tree(n: int, *, depth: int = 6, topk: int = 10, vocab_size: int = 32000, seed: int = 0) -> Draft:
    """A draft of ``n - 1`` nodes (``n`` verified tokens with the root) shaped like an EAGLE-2 tree.

    Levels follow ``level_widths``; node j of a level hangs off node ``j * parents // width`` of the level above,
    so the first parents carry the most children. Token ids are random: values do not matter for timing.
    """
    if n < 1:
        raise ValueError("n counts the root, so n >= 1")
    widths = level_widths(n - 1, depth, topk)
    parents: list[int] = []
    previous: list[int] = []  # node indices of the level above (empty: the root)
    for width in widths:
        level = []
        for j in range(width):
            parents.append(-1 if not previous else previous[j * len(previous) // width])
            level.append(len(parents) - 1)
        previous = level
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab_size, (len(parents),), generator=g).tolist()
    return Draft(tokens, parents)


def chain_draft(n: int, *, vocab_size: int = 32000, seed: int = 0) -> Draft:
    """A sequence draft of ``n - 1`` tokens (``n`` verified tokens with the root)."""
    if n < 1:
        raise ValueError("n counts the root, so n >= 1")
    g = torch.Generator().manual_seed(seed)
    return Draft.chain(torch.randint(0, vocab_size, (n - 1,), generator=g).tolist())


# --------------------------------------------------------------------------------------------- identity


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
    fused = any(getattr(layer.self_attn, "fused", None) is not None for layer in layers)
    linear = "Triton GEMV at 1 row, F.linear above" if any(
        getattr(layer.self_attn, "linear", None) is gemv.linear for layer in layers) else "F.linear"
    short = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(dtype, dtype)
    return {
        "model": getattr(model, "source", None) or type(model).__name__,
        "quant": short if dense else summary["quant_scheme"],
        "backend": "dense" if dense else summary["quant_backend"],
        "kernel": (linear + (" (stacked qkv, gate/up)" if fused else "")) if dense else summary["quant_kernel"],
        "dtype": dtype,
        "layers": int(getattr(model.config, "num_hidden_layers", 0)),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "device": str(device),
        "torch": torch.__version__,
    }


# --------------------------------------------------------------------------------------------- probers


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
    buckets: Sequence[int] = DEFAULT_BUCKETS
    seed: int = 0
    extra: dict = field(default_factory=dict)  # more identity columns for every row
    # KV-cache size of the probed runners. The native attention reads every slot of the static cache (max_seq_len
    # plus the runner's scratch slots), filled or not, so T_t depends on the cache size, not on the fill. None: a
    # cache per context just large enough for it (T_t(ctx) then grows with ctx, like a kernel that reads only the
    # filled length); an int: one cache of that size for every context (match a run's runtime.max_seq_len).
    max_seq_len: int | None = None

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
        self.runner = ForwardRunner(model, size, cuda_graphs=settings.cuda_graphs, buckets=settings.buckets,
                                    compile=settings.compile)
        self.session = ModelSession(self.runner)
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
                "compiled": self.runner.compiled, "timer": timing.timer,
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
        """The runner inputs of ``session.verify(root, draft)`` after the current prefix, padded to their
        CUDA-graph bucket once here (so each timed call is only the runner's copies and the replay)."""
        start, n, dev = self.session.length, len(draft) + 1, self.device
        if start + n > self.runner.max_seq_len:
            raise ValueError(f"context {start} + {n} tokens exceed max_seq_len {self.runner.max_seq_len}")
        ids = torch.tensor(self.ids[start : start + 1] + draft.tokens, device=dev)
        positions = torch.tensor([0] + draft.depths, device=dev) + start
        slots = torch.arange(start, start + n, device=dev)
        mask = tree_mask(start, draft.ancestors(dev), self.runner.total_slots)
        bucket = self.runner.bucket(n) if self.runner.cuda_graphs else None
        inputs = (ids, positions, slots, mask)
        if bucket is not None and bucket != n:
            inputs = self.runner._pad(bucket, *inputs)
        return inputs, bucket

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
        self.runner = ForwardRunner(head, size + settings.tree_depth * settings.tree_topk,
                                    cuda_graphs=settings.cuda_graphs, buckets=settings.buckets,
                                    compile=settings.compile)
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
        inputs = (ids, positions, slots, mask[None, None], features)
        bucket = self.runner.bucket(rows) if self.runner.cuda_graphs else None
        if bucket is not None and bucket != rows:
            inputs = self.runner._pad(bucket, *inputs)
        ids, positions, slots, mask4, features = inputs
        with torch.inference_mode():
            timing = time_calls(lambda: self.runner(ids, positions, slots, mask4, features=features), dev,
                                replays=self.settings.replays, warmup=self.settings.warmup)
        return {"probe": "T_d", "n": rows, "mask": "tree", "context": context, "median_ms": timing.median_ms,
                "p10_ms": timing.p10_ms, "p90_ms": timing.p90_ms, "mean_ms": timing.mean_ms,
                "replays": timing.replays, "component": "eagle_head", "bucket": bucket,
                "cuda_graphs": bool(self.runner.cuda_graphs and bucket is not None),
                "compiled": self.runner.compiled, "timer": timing.timer,
                "cache_slots": self.runner.total_slots, **self.identity}


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


def verify_ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """T_v(n)/T_t per (model, quant, backend, context, mask, n) from probe rows (medians)."""
    keys = [k for k in ("model", "quant", "backend", "kernel", "context") if k in frame]
    t_t = frame[frame.probe == "T_t"].set_index(keys)["median_ms"].rename("T_t_ms")
    t_v = frame[frame.probe == "T_v"].join(t_t, on=keys)
    t_v = t_v.assign(ratio=t_v.median_ms / t_v.T_t_ms)
    return t_v[keys + ["mask", "n", "bucket", "median_ms", "T_t_ms", "ratio"]].reset_index(drop=True)


# --------------------------------------------------------------------------------------------- Eq. (1)


def eq1_speedup(tau: float, d: float, t_d: float, t_t: float, t_v: float) -> float:
    """Eq. (1): ``tau / (d * T_d / T_t + T_v(n) / T_t)``."""
    if t_t <= 0:
        raise ValueError("T_t must be > 0")
    denominator = d * t_d / t_t + t_v / t_t
    if denominator <= 0:
        raise ValueError("d * T_d + T_v must be > 0")
    return tau / denominator


def eq1_from_probes(probes: pd.DataFrame, *, tau: float, d: int, n: int, context: int, mask: str = "tree",
                    draft_rows: int | None = None, draft_component: str = "eagle_head") -> dict:
    """Eq. (1) with probe medians: T_t and T_v(n) at ``context`` (nearest probed context), T_d of
    ``draft_component`` (``draft_rows`` rows for a head; a draft model's decode step), or no draft cost when
    the probes have none (a model-free drafter such as n-gram: ``d`` is then ignored)."""
    contexts = sorted(set(probes.context))
    ctx = min(contexts, key=lambda c: abs(c - context))
    at = probes[probes.context == ctx]
    t_t = float(at[(at.probe == "T_t")].median_ms.iloc[0])
    verify = at[(at.probe == "T_v") & (at["mask"] == mask)]
    if n == 1:
        t_v = t_t
    else:
        if verify.empty:
            raise ValueError(f"no T_v probes with mask {mask!r} at context {ctx}")
        nearest = min(set(verify.n), key=lambda m: abs(m - n))
        t_v = float(verify[verify.n == nearest].median_ms.iloc[0])
    drafts = at[(at.probe == "T_d") & (at.component == draft_component)]
    if draft_rows is not None and not drafts.empty:
        drafts = drafts[drafts.n == min(set(drafts.n), key=lambda m: abs(m - draft_rows))]
    t_d = float(drafts.median_ms.iloc[0]) if not drafts.empty else 0.0
    return {"tau": tau, "d": d, "n": n, "context": ctx, "T_t_ms": t_t, "T_v_ms": t_v, "T_d_ms": t_d,
            "verify_ratio": t_v / t_t, "draft_ratio": d * t_d / t_t,
            "predicted_speedup": eq1_speedup(tau, d, t_d, t_t, t_v)}


def _free(model) -> None:
    if next(model.parameters()).device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


PHASE_COLUMNS = ("draft_ms", "verify_ms", "accept_ms", "sample_ms")


def effective_terms(steps: pd.DataFrame) -> dict:
    """Mean per-step terms of one run from its ``steps.parquet`` rows.

    ``draft_ms`` is the effective ``d * T_d`` (all drafting of a step), ``verify_ms`` the effective T_v at the
    run's draft sizes, ``accept_ms`` the bookkeeping Eq. (1) leaves out; ``tau`` the mean accept length (bonus
    included), ``nodes`` the mean drafted nodes (so verified tokens are ``nodes + 1``).
    """
    if steps.empty:
        raise ValueError("no step rows")
    phases = {c: float(steps[c].mean()) if c in steps else 0.0 for c in PHASE_COLUMNS}
    return {
        "steps": int(len(steps)),
        "tau": float(steps.accept_length.mean()),
        "nodes": float(steps.drafted.mean()),
        "depth": float(steps.draft_depth.mean()) if "draft_depth" in steps else float("nan"),
        **phases,
        "step_ms": float(sum(phases.values())),
        "verify_median_ms": float(steps.verify_ms.median()),
    }


def verify_by_nodes(steps: pd.DataFrame) -> pd.DataFrame:
    """Effective T_v per verified size: median/p10/p90 of ``verify_ms`` grouped by ``n = drafted + 1``."""
    frame = steps.assign(n=steps.drafted + 1)
    grouped = frame.groupby("n").verify_ms
    out = pd.DataFrame({"median_ms": grouped.median(), "p10_ms": grouped.quantile(0.1),
                        "p90_ms": grouped.quantile(0.9), "steps": grouped.size()})
    return out.reset_index()


def measured_speedup(sd_results: pd.DataFrame, ar_results: pd.DataFrame, *, prefill: bool = False) -> dict:
    """Measured speedup from two runs' ``results.parquet`` rows (wall clock, prefill excluded by default).

    ``macro``: the papers' rule, mean over questions of (sum of turn tokens / sum of turn time), SD over AR;
    ``micro``: total tokens over total time, SD over AR.
    """
    time_col = "total_s" if prefill else "decode_s"

    def rates(frame):
        per_q = frame.groupby(["question_id", "repeat"]).agg(tokens=("new_tokens", "sum"), seconds=(time_col, "sum"))
        return float((per_q.tokens / per_q.seconds).mean()), float(per_q.tokens.sum() / per_q.seconds.sum())

    sd_macro, sd_micro = rates(sd_results)
    ar_macro, ar_micro = rates(ar_results)
    return {"measured_speedup": sd_macro / ar_macro, "measured_speedup_micro": sd_micro / ar_micro,
            "sd_tok_s": sd_macro, "ar_tok_s": ar_macro}


def _read_run(run: str | Path | tuple) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """(results, steps) of a run folder, or a (results, steps) pair passed through (results may be None)."""
    if isinstance(run, tuple):
        return run
    folder = Path(run)
    results = folder / "results.parquet"
    return (pd.read_parquet(results) if results.exists() else None), pd.read_parquet(folder / "steps.parquet")


def eq1_report(sd_run, ar_run, *, d: float | None = None, probes: pd.DataFrame | None = None,
               context: int | None = None) -> dict:
    """Eq. (1)'s predicted speedup next to the measured one, for an SD run against its AR baseline.

    ``sd_run`` / ``ar_run``: run folders (``results.parquet`` + ``steps.parquet``) or ``(results, steps)`` pairs.
    Effective terms come from the step logs: ``T_t`` = mean AR verify time, ``d * T_d`` = mean SD draft time per
    step, ``T_v`` = mean SD verify time per step. Reported:

    * ``predicted_speedup``: Eq. (1) with those effective terms (drafting + verification only);
    * ``predicted_speedup_steps``: ``tau * AR step time / SD step time``, the phases' whole step (accept and
      bookkeeping included), i.e. what the step logs imply;
    * ``measured_speedup`` (and ``_micro``): from wall-clock ``results.parquet`` (when present);
    * with ``probes``: ``probe_speedup``, Eq. (1) with isolated probe medians at the run's mean draft size and
      the probed context nearest to ``context`` (default: mean prompt length plus half the mean answer).
    """
    sd_results, sd_steps = _read_run(sd_run)
    ar_results, ar_steps = _read_run(ar_run)
    sd, ar = effective_terms(sd_steps), effective_terms(ar_steps)
    t_t = ar["verify_ms"]
    out = {
        "tau": sd["tau"], "nodes": sd["nodes"], "depth": sd["depth"], "T_t_ms": t_t,
        "draft_ms": sd["draft_ms"], "verify_ms": sd["verify_ms"], "accept_ms": sd["accept_ms"],
        "verify_ratio": sd["verify_ms"] / t_t, "draft_ratio": sd["draft_ms"] / t_t,
        "predicted_speedup": eq1_speedup(sd["tau"], 1.0, sd["draft_ms"], t_t, sd["verify_ms"]),
        "predicted_speedup_steps": sd["tau"] * ar["step_ms"] / sd["step_ms"],
    }
    if d:
        out["d"], out["T_d_ms"] = d, sd["draft_ms"] / d
    if sd_results is not None and ar_results is not None:
        out.update(measured_speedup(sd_results, ar_results))
        out["prediction_error"] = out["predicted_speedup"] / out["measured_speedup"] - 1
    if probes is not None:
        if context is not None:
            ctx = context
        elif sd_results is not None:  # the mean context while decoding: prompt plus half the answer
            ctx = int((sd_results.prompt_tokens + sd_results.new_tokens / 2).mean())
        else:
            ctx = 512
        n = max(1, int(round(sd["nodes"])) + 1)
        has_draft = d is not None and d > 0
        p = eq1_from_probes(probes, tau=sd["tau"], d=int(d) if has_draft else 0, n=n, context=ctx)
        out.update({"probe_T_t_ms": p["T_t_ms"], "probe_T_v_ms": p["T_v_ms"], "probe_T_d_ms": p["T_d_ms"],
                    "probe_speedup": p["predicted_speedup"]})
    return out


def phase_coverage(results: pd.DataFrame, steps: pd.DataFrame) -> float:
    """Sum over steps of draft + verify + accept time, over the runs' wall-clock decode time (1.0 = all of it)."""
    phase_ms = sum(float(steps[c].sum()) for c in ("draft_ms", "verify_ms", "accept_ms") if c in steps)
    decode_ms = float(results.decode_s.sum()) * 1e3
    return phase_ms / decode_ms if decode_ms > 0 else math.nan


def summarize_probes(frame: pd.DataFrame) -> str:
    """A Markdown table of probe medians (ms) with T_v(n)/T_t."""
    lines = ["| model | quant | backend | probe | component | mask | context | n | bucket | median ms | p10 | p90 | "
             "x T_t |", "|" + "---|" * 13]
    t_t = {(r.model, r.quant, r.backend, r.context): r.median_ms for r in frame[frame.probe == "T_t"].itertuples()}
    for r in frame.itertuples():
        base = t_t.get((r.model, r.quant, r.backend, r.context))
        ratio = f"{r.median_ms / base:.2f}" if base and r.probe in ("T_v", "T_t") else ""
        lines.append(f"| {r.model} | {r.quant} | {r.backend} | {r.probe} | {r.component} | {r.mask} | {r.context} | "
                     f"{r.n} | {r.bucket} | {r.median_ms:.3f} | {r.p10_ms:.3f} | {r.p90_ms:.3f} | {ratio} |")
    return "\n".join(lines) + "\n"
