"""An EAGLE-1/2 draft head in its published file layout, and its loader.

Layout (e.g. yuhuili/EAGLE-LLaMA3-Instruct-8B): ``config.json`` (a Llama config with one layer),
``fc.weight`` [h, 2h] (+ ``fc.bias``) over ``[embed(token_{t+1}); f_t]``, and one Llama decoder layer
``layers.0.*`` without an input norm. ``f_t`` is the target's final-norm hidden state at position t; the
head's output goes straight into the target's LM head and is the feature for the next draft step.

Heads made for rotated targets (SpecMQuant's ``…-on-W4A16-Rot`` / ``…-on-W4A8-QQQ``) add
``rms_norm_rotation.weight`` [h, h], applied to the target's (rotated) features before ``fc``, and ship
their own ``lm_head.weight`` (and possibly ``embed_tokens.weight``) in the unrotated basis.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from specbench.model.config import ModelConfig
from specbench.model.kv_cache import StaticKVCache
from specbench.model.loading import ModelSourceError, fill_random, resolve_checkpoint
from specbench.model.rope import rope_inv_freq, rope_tables
from specbench.model.transformer import DecoderLayer, RMSNorm, Transformer, settle


class EagleHeadError(ValueError):
    """An EAGLE head that does not fit its target."""


class DraftHead(nn.Module):
    """What EAGLE-1/2 and EAGLE-3 heads share: ``fc`` into one decoder layer over a one-layer KV cache.

    Subclasses set ``config``, ``fc`` and ``inv_freq``, and implement ``forward`` (the native model's signature
    plus ``features``) and ``logits``.
    """

    config: ModelConfig
    fc: nn.Linear
    inv_freq: torch.Tensor
    cache: StaticKVCache | None = None
    target_layers: tuple[int, ...] = ()  # decoder layers whose inputs the target returns for this head

    def features(self, target_hidden: torch.Tensor) -> torch.Tensor:
        """The features this head reads from the target's forward output [n, …] (final-norm states here)."""
        return target_hidden

    def setup_cache(self, max_seq_len: int) -> StaticKVCache:
        c, w = self.config, self.fc.weight
        self.cache = StaticKVCache(1, c.num_key_value_heads, c.head_dim, max_seq_len, w.dtype, w.device)
        return self.cache

    def rope(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        return rope_tables(self.inv_freq, positions, dtype)

    def target_ids(self, ids: torch.Tensor) -> torch.Tensor:
        """Target-vocabulary ids of the head's vocabulary ids (the same vocabulary here)."""
        return ids

    def placed(self, device: torch.device, dtype: torch.dtype):
        """This head on ``device`` in ``dtype``, frozen, its rotary frequencies kept in float32."""
        head = self.to(device=device, dtype=dtype).eval().requires_grad_(False)
        head.inv_freq = rope_inv_freq(self.config).to(device)
        return head


class EagleHead(DraftHead):
    """EAGLE head bound to a target; ``forward`` follows the native model's signature plus ``features``."""

    def __init__(self, config: ModelConfig, target: Transformer, *, bias: bool = True, rotated: bool = False):
        super().__init__()
        self.config = config
        h = config.hidden_size
        self.fc = nn.Linear(2 * h, h, bias=bias)
        self.layers = nn.ModuleList([DecoderLayer(config, 0)])
        self.layers[0].input_layernorm = nn.Identity()
        self.rms_norm_rotation = nn.Linear(h, h, bias=False) if rotated else None
        self.rotated = rotated
        # The target's embeddings and LM head unless the head ships its own (rotated heads do).
        self.embed_tokens = target.model.embed_tokens
        self.lm_head = target.lm_head
        self.register_buffer("inv_freq", rope_inv_freq(config), persistent=False)

    def forward(self, input_ids, positions, slots, mask, layers=None, *, features, regions=None):
        """``features`` [1, n, h] are target features (or the head's own outputs inside a draft tree); ``regions``
        as ``Transformer.forward``'s."""
        if self.rms_norm_rotation is not None:
            features = self.rms_norm_rotation(features)
        x = self.fc(torch.cat([self.embed_tokens(input_ids), features.to(self.fc.weight.dtype)], dim=-1))
        cos, sin = self.rope(positions, x.dtype)
        x, delta = self.layers[0](x, cos, sin, self.cache, slots, mask, regions)
        return x + settle(delta, x)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden).float()


def read_head_weights(directory: Path) -> dict[str, torch.Tensor]:
    """Every tensor of a head folder: its ``*.safetensors``, else its ``*.bin`` (weights-only unpickling)."""
    files = sorted(directory.glob("*.safetensors"))
    if files:
        from safetensors.torch import load_file

        out = {}
        for f in files:
            out.update(load_file(f))
        return out
    bins = sorted(directory.glob("*.bin"))
    if not bins:
        raise ModelSourceError(f"{directory} holds no EAGLE weights (*.safetensors or pytorch_model.bin)")
    out = {}
    for f in bins:
        out.update(torch.load(f, map_location="cpu", weights_only=True))
    return out


def load_eagle_head(source: str, target: Transformer, *, target_rotated: bool = False) -> EagleHead:
    """Load a head from a hub id or folder and check that it fits ``target``."""
    directory = resolve_checkpoint(source)
    raw = json.loads((directory / "config.json").read_text())
    raw.setdefault("model_type", "llama")
    config = ModelConfig.from_hf(raw, num_hidden_layers=1)
    weights = {k.removeprefix("model."): v for k, v in read_head_weights(directory).items()}
    rotated = "rms_norm_rotation.weight" in weights
    t = target.config
    fc = weights.get("fc.weight")
    if fc is None or tuple(fc.shape) != (t.hidden_size, 2 * t.hidden_size) or config.hidden_size != t.hidden_size:
        raise EagleHeadError(
            f"EAGLE head {source} has fc.weight {None if fc is None else tuple(fc.shape)}; the target's hidden "
            f"size {t.hidden_size} needs ({t.hidden_size}, {2 * t.hidden_size}): this head was trained for another model"
        )
    if config.vocab_size != t.vocab_size:
        raise EagleHeadError(f"EAGLE head {source} has vocab {config.vocab_size}, the target {t.vocab_size}")
    if rotated != target_rotated:
        need = "a head trained on the rotated model (…-on-W4A16-Rot / …-on-W4A8-QQQ)" if target_rotated else "a plain head"
        raise EagleHeadError(
            f"the target is {'rotated' if target_rotated else 'not rotated'} but head {source} is "
            f"{'rotated' if rotated else 'plain'}: its features would not match; use {need}"
        )
    dtype, device = target.lm_head.weight.dtype, target.lm_head.weight.device
    head = EagleHead(config, target, bias="fc.bias" in weights, rotated=rotated)
    if "lm_head.weight" in weights:
        head.lm_head = nn.Linear(t.hidden_size, t.vocab_size, bias=False)
    if "embed_tokens.weight" in weights and rotated:
        head.embed_tokens = nn.Embedding(t.vocab_size, t.hidden_size)
    own = {k: v for k, v in weights.items() if k.startswith(("fc.", "layers.0.", "rms_norm_rotation."))}
    if rotated:
        own.update({k: v for k, v in weights.items() if k.startswith(("lm_head.", "embed_tokens."))})
    missing, unexpected = head.load_state_dict(own, strict=False)
    missing = [k for k in missing if k.startswith(("fc.", "layers.0.", "rms_norm_rotation."))]
    if missing or unexpected:
        raise EagleHeadError(f"EAGLE head {source}: missing {missing}, unexpected {unexpected}")
    return head.placed(device, dtype)


PEAKED_LOGIT_STD = 16.0  # of a random head's logits: the top token takes most of the mass, as with a trained head
FC_GAIN = 0.25  # of a random head's fc: each draft pass feeds the last one's output back, so the recursion contracts


def random_eagle_head(target: Transformer, seed: int = 0) -> EagleHead:
    """A head shaped for ``target`` with random weights: real drafting cost, meaningless acceptance.

    It has its own LM head (the target's shape) behind an RMSNorm, with weights scaled so that its logits have a
    standard deviation of ``PEAKED_LOGIT_STD``: the top token then takes most of the mass, as with a trained head,
    so EAGLE-2's tree grows chains down to its depth and a replayed tau of 4-5 is reached. Through the shared
    random LM head of a shape-only target the logits are nearly uniform over the vocabulary, the tree stays about
    three deep and the achieved tau falls short (2.97 for an imposed 4.16 at d = 6, n = 48 with Llama-3's vocabulary).
    The norm adds one [n, h] elementwise pass per draft pass; values do not change the timing otherwise.

    Each draft pass feeds the previous pass's output back as the feature, through ``fc`` and a layer without an
    input norm, so the linears are drawn with gain 1 (std 1/sqrt(fan_in)) and ``fc`` with ``FC_GAIN``: with the
    models' N(0, 0.02) the output grew about fourfold per pass at Llama-3-70B's width and overflowed float16 by
    depth 6 (NaN draft scores on the H200). A rotated target (``quant.rotated``) gets a rotated head's extra
    [h, h] ``rms_norm_rotation``, as SpecMQuant's Rot heads.
    """
    t = target.config
    weight = target.lm_head.weight
    with torch.device(weight.device):  # drawn where the target lives: ~2e9 numbers at 70B, seconds on a CPU
        head = EagleHead(t.replace(num_hidden_layers=1), target, rotated=target.rotated)
        lm_head = nn.Linear(t.hidden_size, t.vocab_size, bias=False)
    generator = torch.Generator(device=weight.device).manual_seed(seed)
    with torch.no_grad():
        for own in (head.fc, head.layers, head.rms_norm_rotation):  # not the target's embeddings it shares
            if own is not None:
                fill_random(own, generator, gain=FC_GAIN if own is head.fc else 1.0)
        lm_head.weight.normal_(0.0, PEAKED_LOGIT_STD / t.hidden_size**0.5, generator=generator)
    head.lm_head = nn.Sequential(RMSNorm(t.hidden_size, t.rms_norm_eps), lm_head)
    return head.placed(weight.device, weight.dtype)
