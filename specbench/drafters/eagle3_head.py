"""An EAGLE-3 draft head in its published file layout, and its loader.

Layout (``yuhuili/EAGLE3-LLaMA3.1-Instruct-8B``, ``…EAGLE3-LLaMA3.3-Instruct-70B``): ``config.json`` is a one-layer
Llama config plus ``draft_vocab_size`` (32000 for the 8B head; vLLM reads the same field); the weights are

* ``fc.weight`` [h, 3h], no bias: fuses the target's hidden states at three layers, ``[low; mid; high]``;
* ``midlayer.*``: one decoder layer whose attention reads ``[input_layernorm(embed(token)); hidden_norm(g)]``
  (``q/k/v_proj`` take 2h inputs); ``g`` is also the residual, then ``post_attention_layernorm`` and the MLP;
* ``norm.weight`` and ``lm_head.weight`` [draft_vocab, h]: the LM head over a reduced draft vocabulary;
* ``d2t`` [draft_vocab] (int64): an offset map, target id = draft id + ``d2t[draft id]``; ``t2d`` [vocab] (bool):
  which target ids the draft vocabulary holds. Only ``d2t`` drives drafting; both are checked for consistency;
* ``embed_tokens.weight`` optionally; without it the head uses the target's embeddings.

Which target layers: the input of decoder layers ``(2, L // 2, L - 3)`` of an L-layer target (the residual
stream after layers 1, L/2 - 1 and L - 4), in that order, unless the config names others in
``eagle_aux_hidden_state_layer_ids`` (top level or inside ``eagle_config``; same indexing). Sources:
SafeAILab/EAGLE ``eagle/model/modeling_llama_kv.py`` (captures ``hidden_states`` before layer ``idx`` when
``idx`` is 2, ``len(layers) // 2`` or ``len(layers) - 3``) and vLLM ``models/llama.py``
(``get_eagle3_aux_hidden_state_layers`` = ``(2, num_layers // 2, num_layers - 3)``, captured before the layer).
The offset meaning of ``d2t`` is from EAGLE's ``cnets.py`` (``token + d2t[token]``) and vLLM's
``llama_eagle3.py`` (``compute_logits``: ``arange(draft_vocab) + draft_id_to_target_id``).

The first draft step feeds ``fc`` of the target's three states; later steps feed the layer's own output (before
``norm``) unchanged, as EAGLE's ``cnets.py`` and vLLM (``hidden_prenorm``) do.
"""

from __future__ import annotations

import json

import torch
from torch import nn

from specbench.drafters.eagle_head import PEAKED_LOGIT_STD, DraftHead, EagleHeadError, read_head_weights
from specbench.model.config import ModelConfig
from specbench.model.loading import fill_random, resolve_checkpoint
from specbench.model.rope import rope_inv_freq
from specbench.model.transformer import MLP, Attention, RMSNorm, Transformer, settle

OFFICIAL_DRAFT_VOCAB = 32000  # draft_vocab_size of yuhuili's 8B EAGLE-3 head; what a random head uses


def default_target_layers(num_layers: int) -> tuple[int, int, int]:
    """EAGLE-3's low, middle and high layers of an ``num_layers``-layer target."""
    return 2, num_layers // 2, num_layers - 3


class Eagle3Layer(nn.Module):
    """The head's decoder layer (``midlayer``): attention over [normed embedding; normed feature]."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        h, eps = config.hidden_size, config.rms_norm_eps
        self.input_layernorm = RMSNorm(h, eps)
        self.hidden_norm = RMSNorm(h, eps)
        self.self_attn = Attention(config, 0)
        attn = self.self_attn
        attn.qkv = nn.Linear(2 * h, attn.qkv.out_features, bias=config.attention_bias)
        self.post_attention_layernorm = RMSNorm(h, eps)
        self.mlp = MLP(config)

    def forward(self, embeds, feature, cos, sin, cache, slots, mask):
        x = torch.cat([self.input_layernorm(embeds), self.hidden_norm(feature)], dim=-1)
        x = feature + self.self_attn(x, cos, sin, cache, slots, mask)
        return x + settle(self.mlp(self.post_attention_layernorm(x)), x)


class Eagle3Head(DraftHead):
    """EAGLE-3 head bound to a target, reading the inputs of its decoder layers ``target_layers``."""

    def __init__(self, config: ModelConfig, target: Transformer, *, draft_vocab: int,
                 target_layers: tuple[int, ...], own_embeddings: bool = False):
        super().__init__()
        self.config = config
        h = config.hidden_size
        self.target_layers = tuple(target_layers)
        self.fc = nn.Linear(3 * h, h, bias=False)
        self.midlayer = Eagle3Layer(config)
        self.norm = RMSNorm(h, config.rms_norm_eps)
        self.lm_head = nn.Linear(h, draft_vocab, bias=False)
        self.register_buffer("d2t", torch.zeros(draft_vocab, dtype=torch.long))
        self.embed_tokens = nn.Embedding(config.vocab_size, h) if own_embeddings else target.model.embed_tokens
        self.register_buffer("inv_freq", rope_inv_freq(config), persistent=False)

    def features(self, target_hidden):
        """The three layers' states, after the final-norm states in the target's output (``feature_layers``)."""
        return target_hidden[:, self.config.hidden_size :]

    def forward(self, input_ids, positions, slots, mask, layers=None, *, features):
        """``features`` [1, n, 3h]: the target's three states; [1, n, h]: the head's own outputs (later steps)."""
        features = features.to(self.fc.weight.dtype)
        if features.shape[-1] != self.config.hidden_size:
            features = self.fc(features)
        cos, sin = self.rope(positions, features.dtype)
        return self.midlayer(self.embed_tokens(input_ids), features, cos, sin, self.cache, slots, mask)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits over the draft vocabulary (``target_ids`` maps their indices)."""
        return self.lm_head(self.norm(hidden)).float()

    def target_ids(self, ids: torch.Tensor) -> torch.Tensor:
        return ids + self.d2t[ids]


def _target_layers(raw: dict, target: Transformer, source: str) -> tuple[int, ...]:
    named = raw.get("eagle_aux_hidden_state_layer_ids") or (raw.get("eagle_config") or {}).get(
        "eagle_aux_hidden_state_layer_ids")
    num_layers = target.config.num_hidden_layers
    layers = tuple(named) if named else default_target_layers(num_layers)
    if len(layers) != 3 or not all(0 <= i < num_layers for i in layers):
        raise EagleHeadError(
            f"EAGLE-3 head {source}: feature layers {layers} do not fit a {num_layers}-layer target (three layer "
            "indices in 0…L-1 are needed); the head was trained for another model, or name its layers in "
            "config.json as eagle_aux_hidden_state_layer_ids")
    return layers


def _check_maps(d2t: torch.Tensor, t2d: torch.Tensor | None, vocab: int, source: str) -> None:
    targets = torch.arange(d2t.numel()) + d2t
    if targets.min() < 0 or targets.max() >= vocab or targets.unique().numel() != targets.numel():
        raise EagleHeadError(f"EAGLE-3 head {source}: d2t does not map its draft vocabulary to distinct ids of "
                             f"the target's vocabulary of {vocab}: this head was trained for another tokenizer")
    if t2d is not None and (t2d.numel() != vocab or int(t2d.sum()) != d2t.numel() or not t2d.bool()[targets].all()):
        raise EagleHeadError(f"EAGLE-3 head {source}: t2d ({t2d.numel()} entries, {int(t2d.sum())} set) does not "
                             f"agree with d2t over a target vocabulary of {vocab}")


def load_eagle3_head(source: str, target: Transformer, *, target_rotated: bool = False) -> Eagle3Head:
    """Load an EAGLE-3 head from a hub id or folder and check that it fits ``target``."""
    if target_rotated:
        raise EagleHeadError(f"EAGLE-3 head {source}: the target is rotated and no rotated EAGLE-3 heads exist; "
                             "its features would not match (use an unrotated target)")
    directory = resolve_checkpoint(source)
    raw = json.loads((directory / "config.json").read_text())
    raw.setdefault("model_type", "llama")
    config = ModelConfig.from_hf(raw, num_hidden_layers=1)
    weights = read_head_weights(directory)
    if not any(k.startswith("midlayer.") for k in weights):
        raise EagleHeadError(f"{source} has no midlayer.* weights: it is not an EAGLE-3 head in the official "
                             "layout (an EAGLE-1/2 head goes to drafter=eagle)")
    t = target.config
    fc = weights.get("fc.weight")
    h = t.hidden_size
    if fc is None or tuple(fc.shape) != (h, 3 * h) or config.hidden_size != h:
        raise EagleHeadError(
            f"EAGLE-3 head {source} has hidden size {config.hidden_size} and fc.weight "
            f"{None if fc is None else tuple(fc.shape)}; the target's hidden size {h} needs ({h}, {3 * h}): "
            "this head was trained for another model")
    if config.vocab_size != t.vocab_size:
        raise EagleHeadError(f"EAGLE-3 head {source} has vocab {config.vocab_size}, the target {t.vocab_size}: "
                             "this head was trained for another model")
    draft_vocab = raw.get("draft_vocab_size") or config.vocab_size
    lm_head = weights.get("lm_head.weight")
    if lm_head is None or tuple(lm_head.shape) != (draft_vocab, h):
        raise EagleHeadError(f"EAGLE-3 head {source}: lm_head.weight is "
                             f"{None if lm_head is None else tuple(lm_head.shape)}, config draft_vocab_size "
                             f"{draft_vocab} needs ({draft_vocab}, {h})")
    d2t = weights.pop("d2t", None)
    if d2t is None:
        if draft_vocab != t.vocab_size:
            raise EagleHeadError(f"EAGLE-3 head {source}: no d2t map for a draft vocabulary of {draft_vocab}")
        d2t = torch.zeros(draft_vocab, dtype=torch.long)
    _check_maps(d2t.long(), weights.pop("t2d", None), t.vocab_size, source)
    weights["d2t"] = d2t.long()
    own_embeddings = "embed_tokens.weight" in weights
    head = Eagle3Head(config, target, draft_vocab=draft_vocab, target_layers=_target_layers(raw, target, source),
                      own_embeddings=own_embeddings)
    missing, unexpected = head.load_state_dict(weights, strict=False)
    missing = [k for k in missing if own_embeddings or not k.startswith("embed_tokens.")]
    if missing or unexpected:
        raise EagleHeadError(f"EAGLE-3 head {source}: missing {missing}, unexpected {unexpected}")
    return head.placed(target.lm_head.weight.device, target.lm_head.weight.dtype)


def random_eagle3_head(target: Transformer, seed: int = 0) -> Eagle3Head:
    """A head shaped like the official ones for ``target``, random weights: real drafting cost, no meaning.

    The LM head's weights are scaled so its logits have a standard deviation of ``PEAKED_LOGIT_STD`` (the hidden
    state is RMS-normalised): the top token then takes most of the mass, as with a trained head, so the dynamic
    tree grows deep chains and a replayed tau of 5-7 can be reached (near-uniform logits keep the tree at depth 2).
    Values do not change the timing.
    """
    t = target.config
    draft_vocab = min(OFFICIAL_DRAFT_VOCAB, t.vocab_size)
    layers = default_target_layers(t.num_hidden_layers)
    if min(layers) < 0:
        raise EagleHeadError(f"EAGLE-3 needs a target of at least 3 layers, not {t.num_hidden_layers}")
    weight = target.lm_head.weight
    with torch.device(weight.device):  # drawn where the target lives (a CPU takes seconds at 70B)
        head = Eagle3Head(t.replace(num_hidden_layers=1), target, draft_vocab=draft_vocab, target_layers=layers)
    generator = torch.Generator(device=weight.device).manual_seed(seed)
    with torch.no_grad():
        for own in (head.fc, head.midlayer, head.norm):  # not the target's embeddings it shares
            fill_random(own, generator)
        head.lm_head.weight.normal_(0.0, PEAKED_LOGIT_STD / t.hidden_size**0.5, generator=generator)
    head.d2t.zero_()  # draft ids are the first draft_vocab target ids
    return head.placed(weight.device, weight.dtype)
