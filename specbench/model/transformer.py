"""A native decoder-only transformer for the Llama family (Llama-2/3, Mistral, Qwen2, Qwen3).

Module names mirror Hugging Face's, except that each layer holds q/k/v as one stacked linear ``qkv`` and
gate/up as ``gate_up`` (``stacked_linears`` names the checkpoint projections each one holds; the loader and
``load_state_dict`` stack them), so there is one forward path and quantization swaps ``nn.Linear`` modules by
name. Every forward appends ``n`` tokens to a static KV cache at explicit slots and
positions under an explicit boolean attention mask, so the same code runs prefill, a decode step, a sequence
verify and a tree verify, and a CUDA graph can capture any of them.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from specbench.model import attention
from specbench.model.config import ModelConfig
from specbench.model.kv_cache import StaticKVCache
from specbench.model.rope import rope_inv_freq, rope_tables


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig, layer_idx: int, linear: type[nn.Linear] = nn.Linear):
        super().__init__()
        self.layer_idx = layer_idx
        self.n_heads, self.n_kv = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = config.head_dim
        h, bias = config.hidden_size, config.attention_bias
        q, kv = self.n_heads * self.head_dim, self.n_kv * self.head_dim
        self.stacks = {"qkv": {"q_proj": q, "k_proj": kv, "v_proj": kv}}
        self.register_load_state_dict_pre_hook(_stack_state_dict)
        self.qkv = linear(h, q + 2 * kv, bias=bias)
        self.o_proj = linear(q, h, bias=config.o_proj_bias)
        if config.qk_norm:
            self.q_norm = RMSNorm(self.head_dim, config.rms_norm_eps)
            self.k_norm = RMSNorm(self.head_dim, config.rms_norm_eps)
        else:
            self.q_norm = self.k_norm = None

    def forward(self, x, cos, sin, cache: StaticKVCache, slots, mask):
        q, k, v = self.project(x)
        return self.output(attention.write_and_attend(cache, self.layer_idx, slots, q, k, v, mask, (cos, sin)))

    def project(self, x):
        """Queries, keys and values [B, heads, n, head_dim] of ``x`` [B, n, hidden], before RoPE (the cache write
        rotates the keys and the attention the queries)."""
        b, n, _ = x.shape
        q, k, v = self.qkv(x).split(list(self.stacks["qkv"].values()), dim=-1)
        q = q.view(b, n, self.n_heads, self.head_dim)
        k = k.view(b, n, self.n_kv, self.head_dim)
        v = v.view(b, n, self.n_kv, self.head_dim)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

    def output(self, attended):
        """``o_proj`` of the attention output [B, heads, n, head_dim]."""
        b, _, n, _ = attended.shape
        x = attended.transpose(1, 2).reshape(b, n, -1)
        return settle(linear_output(self.o_proj, x, row_reduced=True), x)


class MLP(nn.Module):
    def __init__(self, config: ModelConfig, linear: type[nn.Linear] = nn.Linear):
        super().__init__()
        h, i, bias = config.hidden_size, config.intermediate_size, config.mlp_bias
        self.stacks = {"gate_up": {"gate_proj": i, "up_proj": i}}
        self.register_load_state_dict_pre_hook(_stack_state_dict)
        self.gate_up = linear(h, 2 * i, bias=bias)
        self.down_proj = linear(i, h, bias=bias)

    def forward(self, x):
        """The MLP's output as ``linear_output`` leaves it (``settle`` adds the partial sums it may leave)."""
        gate, up = settle(linear_output(self.gate_up, x), x).chunk(2, dim=-1)
        return linear_output(self.down_proj, F.silu(gate) * up, row_reduced=True)


def linear_output(linear: nn.Module, x: torch.Tensor, row_reduced: bool = False) -> torch.Tensor:
    """``linear(x)``, or its float32 split-K partial sums [split, *x.shape[:-1], out] where the linear leaves their sum
    to the consumer (``QuantLinear.partials``: inside a compiled forward, where Inductor adds them in the consumer's
    kernel and the linear's programs need not wait for one another); ``row_reduced``: the consumer reduces each row
    (a norm), which bounds the partials it can take."""
    # looked up on the class: a plain module's ``__getattr__`` would raise and catch an error per call
    out = linear.partials(x, row_reduced) if hasattr(type(linear), "partials") else None
    return linear(x) if out is None else out


def settle(out: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A ``linear_output`` with its partial sums added, in ``like``'s dtype (unchanged if it has ``like``'s rank).
    Added one by one, not by ``sum``: Inductor folds elementwise adds into the consumer's kernel, where a sum over
    eight or more became a kernel of its own (session 47)."""
    if out.dim() == like.dim():
        return out
    total = out[0]
    for part in out[1:]:
        total = total + part
    return total.to(like.dtype)


def stacked_linears(root: nn.Module) -> dict[str, dict[str, int]]:
    """Each stacked linear under ``root`` -> the checkpoint projections it holds in row order, with their rows.

    Names are relative to ``root``: a decoder layer gives ``{"self_attn.qkv": {"self_attn.q_proj": 4096,
    "self_attn.k_proj": 1024, "self_attn.v_proj": 1024}, "mlp.gate_up": {...}}`` for Llama-3-8B.
    """
    out = {}
    for name, module in root.named_modules():
        if isinstance(module, (Attention, MLP)):
            pre = f"{name}." if name else ""
            out.update({pre + linear: {pre + p: rows for p, rows in parts.items()}
                        for linear, parts in module.stacks.items()})
    return out


def stack_parts(root: nn.Module, tensors: dict[str, torch.Tensor], prefix: str = "") -> dict[str, dict[str, int]]:
    """Concatenate each stacked linear's parts in ``tensors`` (keys ``prefix`` + name; q/k/v, gate/up weights and
    biases, 16/32-bit) under its own name, in row order. Quantized codes, and a bias the linear lacks, are left
    for the caller to use or refuse; a part with the wrong row count raises ``ValueError``. Returns the stacks."""
    stacks = stacked_linears(root)
    for linear, parts in stacks.items():
        for suffix in ("weight", "bias"):
            keys = [f"{prefix}{p}.{suffix}" for p in parts]
            if getattr(root.get_submodule(linear), suffix) is None or not all(
                    k in tensors and tensors[k].is_floating_point() and tensors[k].element_size() > 1 for k in keys):
                continue
            for key, rows in zip(keys, parts.values()):
                if tensors[key].shape[0] != rows:
                    raise ValueError(f"checkpoint tensor {key} has shape {tuple(tensors[key].shape)}, expected "
                                     f"{rows} rows")
            tensors[f"{prefix}{linear}.{suffix}"] = torch.cat([tensors.pop(k) for k in keys])
    return stacks


def _stack_state_dict(module, state_dict, prefix, *args) -> None:
    """``load_state_dict`` pre-hook: a state dict with separate q/k/v (gate/up) loads into the stacked linears."""
    stack_parts(module, state_dict, prefix)


class DecoderLayer(nn.Module):
    def __init__(self, config: ModelConfig, layer_idx: int, linear: type[nn.Linear] = nn.Linear):
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = Attention(config, layer_idx, linear)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = MLP(config, linear)

    def forward(self, x, cos, sin, cache, slots, mask, regions=None, delta=None):
        """The residual stream ``x`` (plus ``delta``, the previous layer's MLP output, when given) through the layer
        -> (the stream before this layer's MLP output is added, that output): the add is left to the next layer's
        input norm, which does it in the same kernel. ``regions``: the (before, after) halves to run, compiled ones
        from ``decoding.forward``; default plain."""
        before, after = regions or self.regions
        x, q, k, v = before(self, x, delta)
        return after(self, x, attention.write_and_attend(cache, self.self_attn.layer_idx, slots, q, k, v, mask,
                                                         (cos, sin)))

    def before_attention(self, x, delta):
        """The residual add left by the layer before, input norm and q/k/v projection: the layer's work up to the
        KV-cache write (which applies RoPE) -> (stream, q, k, v)."""
        if delta is not None:
            x = x + settle(delta, x)
        return x, *self.self_attn.project(self.input_layernorm(x))

    def after_attention(self, x, attended):
        """``o_proj``, its residual add, the post-attention norm and the MLP -> (stream, MLP output)."""
        x = x + self.self_attn.output(attended)
        return x, self.mlp(self.post_attention_layernorm(x))

    # the two halves around the cache write and attention: with ``compile_scope="layer"`` the runner passes compiled
    # ones that every layer of one width shares (the layer index, which picks the cache slab, stays outside them)
    regions = (before_attention, after_attention)


class Backbone(nn.Module):
    """Embeddings, decoder layers and the final norm (Hugging Face's ``model.`` prefix)."""

    def __init__(self, config: ModelConfig, linear: type[nn.Linear] = nn.Linear):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(config, i, linear) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)


class Transformer(nn.Module):
    """Decoder-only LM over a static KV cache. ``forward`` returns final-norm hidden states; ``logits`` maps them.

    ``linear`` is the class of every dense linear (``nn.Linear``, or ``gemv.GemvLinear`` for decode on a GPU):
    the engine chooses the kernel when it builds the model.
    """

    def __init__(self, config: ModelConfig, linear: type[nn.Linear] = nn.Linear):
        super().__init__()
        self.config = config
        self.model = Backbone(config, linear)
        self.lm_head = linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.register_buffer("inv_freq", rope_inv_freq(config), persistent=False)
        self.cache: StaticKVCache | None = None
        self.rotated = False
        self.feature_layers: tuple[int, ...] = ()  # see ``forward``; set by an EAGLE-3 drafter of this model

    def setup_cache(self, max_seq_len: int, dtype: torch.dtype | None = None) -> StaticKVCache:
        """Preallocate the KV cache for ``max_seq_len`` slots (prompt, generation and the largest verify)."""
        c = self.config
        weight = self.model.embed_tokens.weight
        self.cache = StaticKVCache(
            c.num_hidden_layers, c.num_key_value_heads, c.head_dim, max_seq_len, dtype or weight.dtype, weight.device,
            track_positions=c.sliding_window is not None,
        )
        return self.cache

    def rope(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return rope_tables(self.inv_freq, positions, self.model.embed_tokens.weight.dtype)

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        slots: torch.Tensor,
        mask: torch.Tensor,
        layers: Sequence[int] | None = None,
        regions: tuple | None = None,
    ) -> torch.Tensor:
        """Run ``input_ids`` [1, n] at rope ``positions`` [n], writing K/V to cache ``slots`` [n].

        ``mask`` [1, 1, n, max_seq_len] is True where a query may attend a cache slot; a sliding window
        (Mistral) narrows it by the rope positions the cache records per slot. ``layers`` runs only those
        decoder layers (layer-skip self-drafting); ``regions`` are the layers' halves to run (``DecoderLayer``).
        Returns final-norm hidden states [1, n, hidden]; with ``feature_layers`` set, [1, n, hidden * (1 +
        len(feature_layers))]: the final-norm states followed by the input of each listed decoder layer (the
        residual stream there), in the listed order, as one output of the same forward (``logits`` reads the first
        ``hidden`` columns).
        """
        if self.cache is None:
            raise RuntimeError("call setup_cache(max_seq_len) before running the model")
        if layers is not None and self.feature_layers:
            raise RuntimeError("a layer-skipped forward cannot return the feature_layers' hidden states")
        window = self.config.sliding_window
        if window is not None:
            self.cache.positions[slots] = positions
            mask = mask & (self.cache.positions > positions[:, None] - window)
        mask = attention.prepare(mask)
        cos, sin = self.rope(positions)
        x, delta = self.model.embed_tokens(input_ids), None
        blocks = self.model.layers if layers is None else [self.model.layers[i] for i in layers]
        inputs = {}
        for i, layer in enumerate(blocks):
            if i in self.feature_layers:
                inputs[i] = x if delta is None else x + settle(delta, x)
            x, delta = layer(x, cos, sin, self.cache, slots, mask, regions, delta)
        x = self.model.norm(x if delta is None else x + settle(delta, x))
        return torch.cat([x] + [inputs[i] for i in self.feature_layers], dim=-1) if self.feature_layers else x

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden[..., : self.config.hidden_size]).float()
