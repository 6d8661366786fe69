"""Train specbench's tiny model family: one BPE tokenizer, a Llama target, a Llama draft and an EAGLE-1 head.

The corpus is the ``.py`` source of a Python standard library (PSF license): by default that of the Python
running this script, or the tree given with ``--stdlib``. The shipped family used CPython 3.11.7's; its
fingerprint is ``corpus.sha256`` in ``train_log.json``. Full run (about 4 minutes on one H200):

    python tools/train_tiny_family.py --out specbench/assets/tiny [--stdlib /path/to/lib/python3.11]

``--smoke`` trains miniature shapes for a few steps on a small slice of the corpus (seconds on a CPU); the
tests use it to check that the pipeline runs and its losses fall.

``--compare specbench/assets/tiny/train_log.json`` checks a rerun against the shipped run. The settings and the
corpus must be the same (fingerprint, sizes, token counts), else it stops before training (exit 2), and the
final validation metrics must land within tolerance (else exit 1). It prints a table and writes
``compare.json`` in ``--out``.
"""

from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import json
import math
import sys
import sysconfig
import textwrap
import time
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"
SPECIALS = [BOS, EOS, PAD, "<|system|>", "<|user|>", "<|assistant|>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + eos_token }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)
TEST_DIRS = {"test", "tests", "idle_test"}


@dataclass(frozen=True)
class Shape:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    tied: bool


@dataclass
class Settings:
    vocab: int = 4096
    seq: int = 1024
    batch: int = 16
    corpus_mb: float = 32.0
    max_file_kb: int = 800
    chat_samples: int = 4000
    val_every: int = 50  # every 50th file of the ordered list is held out
    target: Shape = Shape(256, 6, 4, 2, 768, tied=False)
    draft: Shape = Shape(128, 2, 4, 2, 256, tied=True)
    target_steps: int = 4000
    draft_steps: int = 3000
    eagle_steps: int = 3000
    target_lr: float = 2e-3
    draft_lr: float = 3e-3
    eagle_lr: float = 2e-3
    target_dropout: float = 0.1
    eval_windows: int = 64
    seed: int = 0


SMOKE = Settings(
    vocab=512, seq=64, batch=8, corpus_mb=0.3, chat_samples=50, val_every=10,
    target=Shape(64, 2, 4, 2, 128, tied=False), draft=Shape(32, 1, 2, 1, 64, tied=True),
    target_steps=40, draft_steps=40, eagle_steps=40, eval_windows=8,
)


# ---------------------------------------------------------------- reproduction check

LOSS_TOLERANCE = 0.05  # nats (EAGLE: smooth-L1 + 0.1 soft CE); GPU reruns differ only by kernel nondeterminism
CHECKED = {  # final metric: its tolerance, None for the loss tolerance
    "target.val_loss": None, "draft.val_loss": None, "eagle.val_loss": None,
    "draft.val_greedy_agreement_with_target": 0.03, "eagle.val_top1_vs_target": 0.03,
}
SAME_CORPUS = ("sha256", "files", "chars", "train_files", "val_files", "chat_samples", "train_tokens",
               "val_tokens", "tokenizer_vocab")


def compare_logs(reference: dict, new: dict, tolerance: float = LOSS_TOLERANCE) -> dict:
    """Compares a rerun's ``train_log.json`` with the reference one. The inputs (the settings, and the corpus's
    text fingerprint, sizes and token counts, so the same tokenizer too) must be identical, else comparing the
    losses means nothing; every metric in ``CHECKED`` must be in ``new`` and within its tolerance.
    Pure: two dicts in, one out."""
    inputs = {k: (reference["corpus"].get(k), new.get("corpus", {}).get(k)) for k in SAME_CORPUS}
    inputs["settings"] = (reference.get("settings"), new.get("settings"))
    inputs_ok = all(a == b and a is not None for a, b in inputs.values())
    rows = []
    for metric, tol in CHECKED.items():
        part, key = metric.split(".")
        ref, got, tol = reference[part][key], new.get(part, {}).get(key), tolerance if tol is None else tol
        diff = None if got is None else round(got - ref, 4)
        rows.append(dict(metric=metric, reference=ref, new=got, diff=diff, tolerance=tol,
                         ok=diff is not None and abs(diff) <= tol + 1e-9))
    return dict(ok=inputs_ok and all(r["ok"] for r in rows), inputs_ok=inputs_ok,
                mismatch={k: v for k, v in inputs.items() if v[0] != v[1] or v[0] is None},
                metrics=rows, reference_run=[reference.get("device"), reference.get("torch")],
                new_run=[new.get("device"), new.get("torch")])


def report_comparison(result: dict, folder: Path) -> None:
    (folder / "compare.json").write_text(json.dumps(result, indent=2) + "\n")
    if not result["inputs_ok"]:
        print("CORPUS OR SETTINGS DIFFER from the reference run, so comparing losses is meaningless; "
              "(reference, new):", json.dumps(result["mismatch"]), flush=True)

    def fmt(x, w):
        return f"{x:{w}.4f}" if x is not None else f"{'-':>{w}}"

    print(f"{'metric':40} {'reference':>9} {'new':>9} {'diff':>8} {'tol':>6}")
    for r in result["metrics"]:
        print(f"{r['metric']:40} {fmt(r['reference'], 9)} {fmt(r['new'], 9)} {fmt(r['diff'], 8)} "
              f"{r['tolerance']:6.3f} {'ok' if r['ok'] else 'missing' if r['new'] is None else 'OUTSIDE'}")
    print("reproduced within tolerance" if result["ok"] else "NOT reproduced", flush=True)


# ---------------------------------------------------------------- corpus and tokenizer

def stdlib_files(root: Path, max_bytes: int) -> list[Path]:
    """Library files first, then test suites, each sorted by path; skips installed packages and huge tables."""
    files = []
    for p in sorted(root.rglob("*.py")):
        parts = set(p.relative_to(root).parts)
        if parts & {"site-packages", "dist-packages", "__pycache__"} or p.stat().st_size > max_bytes:
            continue
        files.append(p)
    return sorted(files, key=lambda p: (bool(set(p.relative_to(root).parts) & TEST_DIRS), str(p.relative_to(root))))


def read_corpus(root: Path, s: Settings) -> tuple[list[str], list[str], dict]:
    """Train and validation texts (held out by file) up to ``corpus_mb`` characters."""
    texts, names, total = [], [], 0
    for p in stdlib_files(root, s.max_file_kb * 1024):
        try:
            text = p.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        if total + len(text) > s.corpus_mb * 1e6:
            break
        texts.append(text)
        names.append(str(p.relative_to(root)))
        total += len(text)
    train = [t for i, t in enumerate(texts) if i % s.val_every != s.val_every // 2]
    val = [t for i, t in enumerate(texts) if i % s.val_every == s.val_every // 2]
    digest = hashlib.sha256("\0".join(n + "\0" + t for n, t in zip(names, texts)).encode()).hexdigest()
    running = root.resolve() == Path(sysconfig.get_paths()["stdlib"]).resolve()
    info = dict(stdlib=str(root), stdlib_of=f"Python {sys.version.split()[0]}" if running else root.name,
                files=len(texts), chars=total,
                train_files=len(train), val_files=len(val), sha256=digest)
    return train, val, info


def chat_samples(texts: list[str], limit: int) -> list[list[dict]]:
    """Single-turn chats: a documented stdlib function's signature and docstring in, its source out."""
    found = []
    for text in texts:
        try:
            with warnings.catch_warnings():  # newer Pythons warn about old files' invalid escapes
                warnings.simplefilter("ignore")
                tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        lines = text.splitlines(keepends=True)
        for node in ast.walk(tree):
            doc = isinstance(node, ast.FunctionDef) and ast.get_docstring(node)
            code = doc and "".join(lines[node.lineno - 1 : node.end_lineno])
            if not code or not 120 <= len(code) <= 2000:
                continue
            summary = doc.strip().split("\n\n")[0]
            prompt = f"Write a Python function `{node.name}({ast.unparse(node.args)})`. {summary}"
            answer = "```python\n" + textwrap.dedent(code).strip() + "\n```"
            found.append([{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}])
    stride = max(1, len(found) // limit) if limit else len(found) + 1
    return found[::stride][:limit]


@functools.cache
def chat_template():
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(CHAT_TEMPLATE)


def render_chat(messages: list[dict], add_generation_prompt: bool = False) -> str:
    """The chat template rendered the way transformers renders it."""
    return chat_template().render(
        messages=messages, add_generation_prompt=add_generation_prompt, bos_token=BOS, eos_token=EOS)


def train_tokenizer(texts: list[str], vocab: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer, length=len(texts))
    tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, tok.token_to_id(BOS))])
    return tok


def save_tokenizer(tok, folder: Path, max_len: int) -> None:
    tok.save(str(folder / "tokenizer.json"))
    config = dict(tokenizer_class="PreTrainedTokenizerFast", bos_token=BOS, eos_token=EOS, pad_token=PAD,
                  model_max_length=max_len, clean_up_tokenization_spaces=False, chat_template=CHAT_TEMPLATE)
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")


def token_stream(tok, docs: list[str]) -> torch.Tensor:
    """Documents wrapped in BOS … EOS (chats already carry theirs) and concatenated."""
    bos, eos = tok.token_to_id(BOS), tok.token_to_id(EOS)
    ids = []
    for doc, enc in zip(docs, tok.encode_batch(docs, add_special_tokens=False)):
        ids += enc.ids if doc.startswith(BOS) else [bos, *enc.ids, eos]
    return torch.tensor(ids, dtype=torch.int32)


# ---------------------------------------------------------------- models (Hugging Face Llama names)

class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rope(seq: int, head_dim: int, device, theta: float = 10000.0):
    inv = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    ang = torch.arange(seq, device=device, dtype=torch.float32)[:, None] * inv[None]
    ang = torch.cat((ang, ang), -1)
    return ang.cos(), ang.sin()


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), -1) * sin


class Attention(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.heads, self.kv, self.hd = s.heads, s.kv_heads, s.hidden // s.heads
        self.q_proj = nn.Linear(s.hidden, s.hidden, bias=False)
        self.k_proj = nn.Linear(s.hidden, self.kv * self.hd, bias=False)
        self.v_proj = nn.Linear(s.hidden, self.kv * self.hd, bias=False)
        self.o_proj = nn.Linear(s.hidden, s.hidden, bias=False)

    def forward(self, x, cos, sin):
        b, n, _ = x.shape
        q = self.q_proj(x).view(b, n, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, n, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, n, self.kv, self.hd).transpose(1, 2)
        q, k = rotate(q, cos, sin).to(v.dtype), rotate(k, cos, sin).to(v.dtype)
        rep = self.heads // self.kv
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, -1))


class MLP(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.gate_proj = nn.Linear(s.hidden, s.ffn, bias=False)
        self.up_proj = nn.Linear(s.hidden, s.ffn, bias=False)
        self.down_proj = nn.Linear(s.ffn, s.hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, s: Shape, input_norm: bool = True, dropout: float = 0.0):
        super().__init__()
        self.dropout = dropout  # on each residual branch, training only
        if input_norm:  # EAGLE's single layer has none
            self.input_layernorm = RMSNorm(s.hidden)
        self.self_attn = Attention(s)
        self.post_attention_layernorm = RMSNorm(s.hidden)
        self.mlp = MLP(s)

    def forward(self, x, cos, sin):
        a = self.input_layernorm(x) if hasattr(self, "input_layernorm") else x
        x = x + F.dropout(self.self_attn(a, cos, sin), self.dropout, self.training)
        return x + F.dropout(self.mlp(self.post_attention_layernorm(x)), self.dropout, self.training)


def init_weights(module: nn.Module, layers: int) -> None:
    for name, p in module.named_parameters():
        if p.dim() == 2:
            std = 0.02 / math.sqrt(2 * layers) if name.endswith(("o_proj.weight", "down_proj.weight")) else 0.02
            nn.init.normal_(p, std=std)
        elif name.endswith("bias"):
            nn.init.zeros_(p)


class LlamaLM(nn.Module):
    def __init__(self, s: Shape, vocab: int, dropout: float = 0.0):
        super().__init__()
        self.shape = s
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(vocab, s.hidden)
        self.model.layers = nn.ModuleList(Layer(s, dropout=dropout) for _ in range(s.layers))
        self.model.norm = RMSNorm(s.hidden)
        self.lm_head = nn.Linear(s.hidden, vocab, bias=False)
        init_weights(self, s.layers)
        if s.tied:
            self.lm_head.weight = self.model.embed_tokens.weight

    def features(self, ids):
        """Hidden states after the final RMSNorm, [B, n, hidden]."""
        cos, sin = rope(ids.shape[1], self.shape.hidden // self.shape.heads, ids.device)
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        return self.model.norm(x)

    def forward(self, ids):
        return self.lm_head(self.features(ids))


class EagleHead(nn.Module):
    """EAGLE-1: h = Layer_no_input_norm(fc([embed(token_{t+1}), f_t])) at positions 0…n-1; logits = lm_head(h)."""

    def __init__(self, s: Shape):
        super().__init__()
        self.shape = s
        self.fc = nn.Linear(2 * s.hidden, s.hidden, bias=True)
        self.layers = nn.ModuleList([Layer(s, input_norm=False)])
        init_weights(self, 1)

    def forward(self, next_embeds, features):
        cos, sin = rope(features.shape[1], self.shape.hidden // self.shape.heads, features.device)
        return self.layers[0](self.fc(torch.cat((next_embeds, features), -1)), cos, sin)


# ---------------------------------------------------------------- training

def batches(stream: torch.Tensor, s: Settings, seed: int, device):
    gen = torch.Generator().manual_seed(seed)
    offsets = torch.arange(s.seq + 1)
    while True:
        starts = torch.randint(0, len(stream) - s.seq - 1, (s.batch,), generator=gen)
        yield stream[starts[:, None] + offsets].long().to(device, non_blocking=True)


def val_windows(stream: torch.Tensor, s: Settings, device) -> torch.Tensor:
    n = min(s.eval_windows, (len(stream) - 1) // s.seq)
    return torch.stack([stream[i * s.seq : i * s.seq + s.seq + 1] for i in range(n)]).long().to(device)


def autocast(device):
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


def optimize(name: str, module: nn.Module, loss_fn, val_fn, steps: int, lr: float, device) -> dict:
    """AdamW, linear warm-up, cosine decay to 10%. Evaluates ``val_fn`` ten times and keeps the best weights."""
    params = [p for p in module.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.1, fused=device.type == "cuda")
    warm, every = max(1, steps // 20), max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda i: min(1.0, (i + 1) / warm) * (0.1 + 0.45 * (1 + math.cos(math.pi * min(i, steps) / steps))))
    curve, recent, best, start = [], [], (math.inf, 0, None), time.time()
    for step in range(1, steps + 1):
        module.train()
        with autocast(device):
            loss = loss_fn()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        recent.append(loss.detach())
        if step % every == 0 or step == 1:
            module.eval()
            train_loss, val_loss = torch.stack(recent).float().mean().item(), val_fn()
            curve.append([step, round(train_loss, 4), round(val_loss, 4)])
            recent = []
            if val_loss < best[0]:
                best = (val_loss, step, {k: v.detach().clone() for k, v in module.state_dict().items()})
            print(f"{name} step {step}/{steps} train {train_loss:.4f} val {val_loss:.4f} ({time.time() - start:.0f}s)",
                  flush=True)
    module.load_state_dict(best[2])
    module.eval()
    return dict(params=sum(p.numel() for p in params), steps=steps, lr=lr, best_step=best[1],
                curve_step_train_val=curve, final_train_loss=curve[-1][1], seconds=round(time.time() - start, 1))


@torch.no_grad()
def lm_val_loss(model: LlamaLM, windows: torch.Tensor, device) -> float:
    total = 0.0
    for chunk in windows.split(16):
        with autocast(device):
            logits = model(chunk[:, :-1])
        total += F.cross_entropy(logits.float().flatten(0, 1), chunk[:, 1:].flatten(), reduction="sum").item()
    return total / windows[:, 1:].numel()


def train_lm(name, shape, s, steps, lr, dropout, train, val, device, seed):
    torch.manual_seed(seed)
    model = LlamaLM(shape, s.vocab, dropout).to(device)
    data = batches(train, s, seed, device)

    def loss_fn():
        x = next(data)
        return F.cross_entropy(model(x[:, :-1]).float().flatten(0, 1), x[:, 1:].flatten())

    log = optimize(name, model, loss_fn, lambda: lm_val_loss(model, val, device), steps, lr, device)
    log.update(dropout=dropout, val_loss=round(lm_val_loss(model, val, device), 4))
    log["val_ppl"] = round(math.exp(log["val_loss"]), 3)
    print(f"{name}: {log['params']} params, best step {log['best_step']}, val {log['val_loss']}", flush=True)
    return model, log


def eagle_losses(head, target, x, noise: float = 0.0):
    """Smooth-L1 of h_t to f_{t+1}, soft cross-entropy of lm_head(h_t) to the target's distribution at t+1,
    and how often argmax lm_head(h_t) equals the target's greedy token at t+1 (the token after token_{t+1})."""
    with torch.no_grad():
        f = target.features(x)
        target_logits = target.lm_head(f[:, 1:]).float()
        embeds = target.model.embed_tokens(x[:, 1:])
    feats = f[:, :-1]
    if noise:
        feats = feats + (torch.rand_like(feats) - 0.5) * 2 * noise
    h = head(embeds, feats)
    logits = target.lm_head(h).float()
    reg = F.smooth_l1_loss(h.float(), f[:, 1:].float())
    ce = -(target_logits.softmax(-1) * logits.log_softmax(-1)).sum(-1).mean()
    acc = (logits.argmax(-1) == target_logits.argmax(-1)).float().mean()
    return reg, ce, acc


@torch.no_grad()
def eagle_val(head, target, val, device) -> list[float]:
    """Mean smooth-L1, soft CE and top-1 agreement over the validation windows."""
    with autocast(device):
        parts = [torch.stack(eagle_losses(head, target, chunk)).float().cpu() for chunk in val.split(16)]
    return torch.stack(parts).mean(0).tolist()


def train_eagle(target, s, train, val, device, seed):
    torch.manual_seed(seed)
    target.eval().requires_grad_(False)
    head = EagleHead(target.shape).to(device)
    data = batches(train, s, seed, device)

    def loss_fn():
        reg, ce, _ = eagle_losses(head, target, next(data), noise=0.1)
        return reg + 0.1 * ce

    def val_fn():
        reg, ce, _ = eagle_val(head, target, val, device)
        return reg + 0.1 * ce

    log = optimize("eagle", head, loss_fn, val_fn, s.eagle_steps, s.eagle_lr, device)
    reg, ce, acc = eagle_val(head, target, val, device)
    log.update(val_smooth_l1=round(reg, 4), val_soft_ce=round(ce, 4), val_loss=round(reg + 0.1 * ce, 4),
               val_top1_vs_target=round(acc, 4))
    print(f"eagle: val smooth-L1 {reg:.4f}, soft CE {ce:.4f}, top-1 agreement {acc:.3f}", flush=True)
    return head, log


# ---------------------------------------------------------------- export

def hf_config(shape: Shape, s: Settings, tok, layers: int | None = None, **extra) -> dict:
    return dict(
        architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=s.vocab, hidden_size=shape.hidden,
        intermediate_size=shape.ffn, num_hidden_layers=layers or shape.layers, num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads, head_dim=shape.hidden // shape.heads, hidden_act="silu",
        max_position_embeddings=s.seq, rms_norm_eps=1e-5, rope_theta=10000.0,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, attention_bias=False, mlp_bias=False,
        tie_word_embeddings=shape.tied, bos_token_id=tok.token_to_id(BOS), eos_token_id=tok.token_to_id(EOS),
        pad_token_id=tok.token_to_id(PAD), dtype="float16", **extra)


def save_weights(module: nn.Module, folder: Path, drop: tuple[str, ...] = ()) -> None:
    from safetensors.torch import save_file

    state = {k: v.detach().to("cpu", torch.float16).contiguous()
             for k, v in module.state_dict().items() if k not in drop}
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})


def export_lm(folder: Path, model: LlamaLM, s: Settings, tok) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    cfg = hf_config(model.shape, s, tok)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    gen = dict(bos_token_id=cfg["bos_token_id"], eos_token_id=cfg["eos_token_id"], pad_token_id=cfg["pad_token_id"])
    (folder / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    save_tokenizer(tok, folder, s.seq)
    save_weights(model, folder, drop=("lm_head.weight",) if model.shape.tied else ())


def export_eagle(folder: Path, head: EagleHead, s: Settings, tok) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    cfg = hf_config(head.shape, s, tok, layers=1, bias=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    save_weights(head, folder)


@torch.no_grad()
def greedy_agreement(a: LlamaLM, b: LlamaLM, windows: torch.Tensor, device) -> float:
    same = 0.0
    for chunk in windows.split(16):
        with autocast(device):
            same += (a(chunk[:, :-1]).argmax(-1) == b(chunk[:, :-1]).argmax(-1)).float().sum().item()
    return same / windows[:, :-1].numel()


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path, help="folder for target/, draft/, eagle/ and train_log.json")
    ap.add_argument("--smoke", action="store_true", help="miniature shapes and a few steps (CPU, seconds)")
    ap.add_argument("--stdlib", type=Path, default=Path(sysconfig.get_paths()["stdlib"]), help="corpus root")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a number in Settings")
    ap.add_argument("--compare", type=Path, metavar="TRAIN_LOG", help="reference train_log.json to reproduce")
    ap.add_argument("--tolerance", type=float, default=LOSS_TOLERANCE, help="for the final val losses")
    args = ap.parse_args(argv)
    reference = json.loads(args.compare.read_text()) if args.compare else None
    stdlib_given = args.stdlib != Path(sysconfig.get_paths()["stdlib"])
    s = SMOKE if args.smoke else Settings()
    for item in args.set:
        key, value = item.split("=")
        s = replace(s, **{key: type(getattr(s, key))(value)})
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = True
    begin = time.time()
    log = dict(command=" ".join(["python tools/train_tiny_family.py --out OUT"] + (["--smoke"] if args.smoke else [])
                                + [f"--set {x}" for x in args.set]
                                + (["--stdlib", args.stdlib.name] if stdlib_given else [])),
               device=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
               torch=torch.__version__, settings=asdict(s))

    def save_log(**parts):  # after every stage, so a run cut short keeps what it finished
        log.update(parts, total_seconds=round(time.time() - begin, 1))
        (args.out / "train_log.json").write_text(json.dumps(log, indent=2) + "\n")

    train_texts, val_texts, corpus = read_corpus(args.stdlib, s)
    tok = train_tokenizer(train_texts, s.vocab)
    chats = [render_chat(m) for m in chat_samples(train_texts, s.chat_samples)]
    train = token_stream(tok, train_texts + chats)
    val_stream = token_stream(tok, val_texts)
    val = val_windows(val_stream, s, device)
    corpus.update(chat_samples=len(chats), train_tokens=len(train), val_tokens=len(val_stream),
                  tokenizer_vocab=tok.get_vocab_size(), seconds=round(time.time() - begin, 1))
    print("corpus:", json.dumps(corpus), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "val_sample.txt").write_text("\n\n".join(val_texts)[: 4_000 if args.smoke else 64_000])
    save_log(corpus=corpus)
    if reference and not (early := compare_logs(reference, log, args.tolerance))["inputs_ok"]:
        report_comparison(early, args.out)  # another corpus or other settings: stop before training
        raise SystemExit(2)

    target, target_log = train_lm("target", s.target, s, s.target_steps, s.target_lr, s.target_dropout,
                                  train, val, device, s.seed)
    export_lm(args.out / "target", target, s, tok)
    save_log(target=target_log)
    draft, draft_log = train_lm("draft", s.draft, s, s.draft_steps, s.draft_lr, 0.0, train, val, device, s.seed + 1)
    draft_log["val_greedy_agreement_with_target"] = round(greedy_agreement(draft, target, val, device), 4)
    export_lm(args.out / "draft", draft, s, tok)
    save_log(draft=draft_log)
    head, eagle_log = train_eagle(target, s, train, val, device, s.seed + 2)
    export_eagle(args.out / "eagle", head, s, tok)
    save_log(eagle=eagle_log)
    print(f"done in {log['total_seconds']}s", flush=True)
    if reference:
        result = compare_logs(reference, log, args.tolerance)
        report_comparison(result, args.out)
        if not result["ok"]:
            raise SystemExit(1)
    return log


if __name__ == "__main__":
    main()
