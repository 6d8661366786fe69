"""One run: a target, a method (drafter), a prompt set; rows to parquet, a summary to the terminal.

A job runs its ``drafter`` and, with ``baseline: true``, the autoregressive baseline and any drafters named
in ``compare`` against the same loaded target, so speedups come from one process on one GPU; the next job of the
process on the same target reuses it (``runner.loaded``). Each method has
its own run folder ``output.root/output.name/<config hash>/`` (the hash covers everything that defines the
measurement), so reruns resume and a baseline already measured is reused. One process at a time measures into a
folder (``locks.run_folder_lock``): a job whose baseline another job of the sweep is measuring right now measures
its own drafters first and then resumes the baseline, which by then is normally complete.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from specbench.atomic import write_text_atomic
from specbench.config import ConfigValueError
from specbench.datasets import Question, build_prompt, get_dataset, load_questions
from specbench.datasets.synthetic import fixed_length_questions, task_shaped_questions
from specbench.datasets.scoring import score_answer
from specbench.decoding.acceptance import accept
from specbench.decoding.generate import Generation, generate
from specbench.decoding.phases import PhaseTimer
from specbench.decoding.replay import ReplayAcceptance, per_task_replay
from specbench.drafters import DRAFTERS, drafter_conf
from specbench.engine import Engine, torch_dtype
from specbench.errors import ConfigError
from specbench.model import gemv
from specbench.quantization import describe
from specbench.runner.build import load_tokenizer, sampling_params
from specbench.runner.config import check_settings, config_hash, flatten
from specbench.runner.environment import environment, source_hash
from specbench.runner.gpu_pool import bind, current_lease, resolve_device
from specbench.runner.loaded import LOADED
from specbench.runner.locks import run_folder_lock
from specbench.runner.metrics import generation_row, step_rows
from specbench.runner.store import ResultStore

log = logging.getLogger("specbench")
# facts a row holds under another name: ``drafter`` is drafter.name, ``quant.rotated`` is rotated
SAID_ELSEWHERE = ("drafter.name", "rotated")


def method_configs(cfg: DictConfig) -> list[DictConfig]:
    """The run config of each method this job measures: baseline first, then ``drafter``, then ``compare``.

    The baseline runs with its schema's defaults; each ``compare`` drafter with its node ``compare.<name>`` (the
    schema's defaults in ``specbench/drafters/<name>.py`` unless overridden, e.g. ``compare.eagle.topk=8``).
    A replayed AR baseline replays tau = 1 whatever the job's drafter replays, so the jobs of one target share it.
    """
    drafters = []
    if cfg.get("baseline", False) and cfg.drafter.name != "none":
        drafters.append(OmegaConf.structured(DRAFTERS["none"].conf))
    drafters.append(cfg.drafter)
    drafters += list((cfg.get("compare") or {}).values())
    out = []
    for drafter in drafters:
        one = OmegaConf.masked_copy(cfg, [k for k in cfg if k not in ("drafter", "compare", "baseline")])
        one.drafter = drafter
        if drafter.name == "none" and one.timing.acceptance == "replay":  # AR accepts nothing: one run for every tau
            one.timing.replay_tau, one.timing.replay_trace, one.timing.replay_tau_by_task = 1.0, None, None
            one.timing.replay_source = "autoregressive: tau = 1"
        out.append(one)
    return out


def run_dir(cfg: DictConfig) -> Path:
    return Path(cfg.output.root) / cfg.output.name / config_hash(cfg)


def use_device(cfg: DictConfig) -> str:
    """Resolve ``runtime.device`` (``cuda:auto`` leases a free GPU, then reads ``cuda``) and make it current."""
    device = cfg.runtime.device = resolve_device(cfg.runtime)
    dev = torch.device(device)
    if dev.type == "cuda":  # events, streams and graphs use the current device
        lease = current_lease()
        if dev.index is not None:
            torch.cuda.set_device(dev)
        elif lease is not None:
            bind(lease)
    return device


class RunOutOfMemory(RuntimeError):
    """The run's models, KV caches and graphs do not fit the device; the message says what to change."""


def run(cfg: DictConfig) -> list[Path]:
    """Measure every method of ``cfg``; return their run folders."""
    try:
        return _run(cfg)
    except torch.OutOfMemoryError as err:
        LOADED.release()
        raise RunOutOfMemory(out_of_memory_advice(cfg, err)) from err
    except BaseException:
        LOADED.release()  # a failed job may leave the session half-used: the next job builds afresh
        raise


def out_of_memory_advice(cfg: DictConfig, err: Exception) -> str:
    device = torch.device(cfg.runtime.device)
    held = ""
    if device.type == "cuda" and torch.cuda.is_available():
        total = torch.cuda.get_device_properties(device).total_memory
        held = (f" (peak {torch.cuda.max_memory_allocated(device) / 2**30:.1f} GiB allocated of "
                f"{total / 2**30:.1f} GiB on {torch.cuda.get_device_name(device)})")
    drafter = cfg.drafter.get("model") or {}
    return (f"out of memory{held} running {cfg.model.source} with quant {cfg.quant.scheme}, drafter {cfg.drafter.name}"
            f"{' + ' + drafter.get('source') if drafter.get('source') else ''}, runtime.max_seq_len="
            f"{cfg.runtime.max_seq_len}. To fit: lower runtime.max_seq_len (every model's KV cache holds that many "
            "tokens plus 128 scratch slots), quantize the weights (quant=w4a16 or w8a8_int8; drafter.quant for a draft "
            "model), measure fewer methods per job (compare=[] baseline=false), or use a larger GPU. "
            f"PyTorch said: {str(err).splitlines()[0]}")


def check_config(cfg: DictConfig) -> list[DictConfig]:
    """Every method's config, after refusing any out-of-range setting (before a model or GPU is touched)."""
    check_settings(cfg)
    torch_dtype(cfg.runtime.dtype)
    drafter_conf(cfg.drafter)  # the baseline runs with its schema's checked defaults
    for name, node in (cfg.get("compare") or {}).items():
        if node.name != name:
            raise ConfigValueError(f"compare.{name}.name={node.name!r} is not allowed: a compared drafter keeps its "
                                   f"own name; add it to compare=[...] instead")
        drafter_conf(node, prefix=f"compare.{name}")
    return method_configs(cfg)


def _run(cfg: DictConfig) -> list[Path]:
    check_config(cfg)
    use_device(cfg)
    torch.manual_seed(cfg.runtime.seed)
    if cfg.runtime.get("threads"):
        torch.set_num_threads(cfg.runtime.threads)
    start = time.perf_counter()
    engine, target, session = LOADED.get(cfg)
    build_s = time.perf_counter() - start  # ~0 when the previous job's target is reused
    if cfg.dataset.name == "synthetic" or cfg.dataset.synthetic:
        tokenizer, spec, questions = None, None, synthetic_questions(cfg.dataset, target.config.vocab_size)
    else:
        tokenizer = load_tokenizer(cfg.model)
        spec = get_dataset(cfg.dataset.name)
        questions = load_questions(cfg.dataset.name, path=cfg.dataset.path, categories=cfg.dataset.categories,
                                   question_begin=cfg.dataset.question_begin, question_end=cfg.dataset.question_end)
    if not questions:
        raise ConfigError(f"dataset={cfg.dataset.name} has no questions with these filters (dataset.categories="
                          f"{cfg.dataset.categories}, dataset.question_begin={cfg.dataset.question_begin}, "
                          f"dataset.question_end={cfg.dataset.question_end}); widen them")
    methods = [(method, run_dir(method)) for method in method_configs(cfg)]
    busy = []
    for method, folder in methods:  # a folder another process is measuring into is left for last
        with run_folder_lock(folder, wait=False) as held:
            if held:
                measure(method, folder, engine, session, tokenizer, spec, questions, build_s)
            else:
                busy.append((method, folder))
    for method, folder in busy:  # waits for the other process, then resumes what it left (normally nothing)
        with run_folder_lock(folder):
            measure(method, folder, engine, session, tokenizer, spec, questions, build_s)
    return [folder for _, folder in methods]


def measure(method: DictConfig, folder: Path, engine: Engine, session, tokenizer, spec, questions,
            target_build_s: float) -> None:
    """Measure one method into its folder (the caller holds the folder's lock)."""
    folder.mkdir(parents=True, exist_ok=True)
    store = ResultStore(folder)
    label = method.drafter.label or method.drafter.name
    if not pending(method, store, questions) and (folder / "env.json").exists():
        log.info("%s: every question already measured in %s", label, folder)
        return
    if method.output.resume and (stale := store.forget_other_versions(source_hash())):
        log.warning("%s: %d question(s) in %s were measured by other code (env.source_hash): measured again, so the "
                    "run holds one version's rows", label, stale, folder)
    write_text_atomic(folder / "config.yaml", OmegaConf.to_yaml(method))
    write_text_atomic(folder / "env.json", json.dumps(environment(method.runtime.device), indent=2))
    run_method(method, engine, session, tokenizer, spec, questions, store, target_build_s)
    store.compact()


def pending(cfg, store: ResultStore, questions) -> list[tuple[int, Question]]:
    """(repeat, question) pairs still to measure."""
    return [(r, q) for r in range(cfg.timing.repeats) for q in questions
            if not (cfg.output.resume and store.is_done(q.question_id, r))]


def gpu_memory(device: str) -> dict:
    """Peak and total memory of a CUDA device (bytes) so far in this process: shows what a configuration needs."""
    device = torch.device(device)
    if device.type != "cuda":
        return {}
    return {"gpu_peak_allocated_bytes": torch.cuda.max_memory_allocated(device),
            "gpu_total_bytes": torch.cuda.get_device_properties(device).total_memory}


def synthetic_questions(dataset, vocab_size: int) -> list[Question]:
    """Random-token prompts for shape-only timing runs that have no tokenizer (see specbench/datasets/synthetic.py)."""
    if dataset.name == "synthetic":
        return fixed_length_questions(dataset.synthetic_questions, dataset.synthetic_prompt_tokens, vocab_size)
    return task_shaped_questions(dataset.name, dataset.synthetic_questions, vocab_size, dataset.categories)


def acceptors(timing, dataset: str) -> tuple:
    """(outer, inner) acceptance rules: the real ones, or replayed patterns for timing-only runs; ``outer`` is a
    function of the question category (``timing.replay_tau_by_task``)."""
    if timing.acceptance == "real":
        return (lambda category: accept), accept
    inner = ReplayAcceptance(tau=timing.replay_inner_tau) if timing.replay_inner_tau else accept
    return per_task_replay(timing, dataset), inner


def run_method(cfg, engine: Engine, session, tokenizer, spec, questions, store: ResultStore,
               target_build_s: float) -> None:
    """Warm up, then measure every pending question; rows record the start-up cost (``target_build_s``: the job's
    target build, ``warmup_s``: this method's drafter build, warm-up generations and first prefills, where
    compilation and graph capture land)."""
    started = time.perf_counter()
    generator = torch.Generator(device=cfg.runtime.device)
    outer_for, inner = acceptors(cfg.timing, cfg.dataset.name)
    sampling = sampling_params(cfg.runtime)
    drafter = engine.drafter(cfg.drafter, session, sampling, generator, acceptor=inner)
    max_new = cfg.dataset.max_new_tokens or (spec.max_new_tokens if spec else 256)
    replay = cfg.timing.acceptance == "replay"
    settings = {k: v for k, v in flatten(cfg).items() if k not in SAID_ELSEWHERE}
    loaded = {k: v for k, v in describe(session.model)["summary"].items() if k not in SAID_ELSEWHERE}
    identity = {**settings, "config_hash": config_hash(cfg), **environment(cfg.runtime.device),
                **loaded, **drafter.describe(),
                "weights": "shape_only" if cfg.model.shape_only else "real",
                "acceptance_source": cfg.timing.acceptance}

    def one(question, turn, answers, seed, new_tokens=max_new) -> Generation:
        if tokenizer is None:
            ids, stops = question.turns[turn], frozenset()
        else:
            prompt = build_prompt(tokenizer, question, turn, answers, style=spec.prompt_style,
                                  system_prompt=cfg.dataset.system_prompt, enable_thinking=cfg.dataset.enable_thinking)
            ids, stops = prompt.input_ids, frozenset(prompt.stop_token_ids)
        if cfg.dataset.ignore_eos or replay:  # replayed runs time a fixed length: random weights' EOS means nothing
            stops = frozenset()
        generator.manual_seed(seed)
        timer = PhaseTimer(cfg.runtime.device, enabled=cfg.timing.phase_events)
        return generate(session, drafter, ids, max_new_tokens=new_tokens, sampling=sampling, stop_ids=stops,
                        generator=generator, timer=timer, acceptor=outer_for(question.category),
                        on_device=None if cfg.engine.device_loop else False)

    todo = pending(cfg, store, questions)
    if not todo:
        return
    for i in range(cfg.timing.warmup):
        one(questions[0], 0, [], cfg.runtime.seed + i, cfg.timing.warmup_new_tokens or max_new)
    # every question's first turn prefilled once, untimed: the first prefill of a new length may compile a kernel
    # or capture a graph for its M, which must not land in that question's prefill time
    if cfg.timing.warmup:
        for question in {q.question_id: q for _, q in todo}.values():
            one(question, 0, [], cfg.runtime.seed, 1)
    identity |= {"target_build_s": target_build_s, "warmup_s": time.perf_counter() - started,
                 "gemv_configs": gemv.chosen_configs()}  # autotuned during the warm-up
    progress = Progress(len(todo), cfg.output.progress, cfg.drafter.label or cfg.drafter.name)
    for repeat, question in todo:
        rows, steps, answers = [], [], []
        turns = question.turns[: cfg.dataset.max_turns or None]
        for turn in range(len(turns)):
            seed = cfg.runtime.seed * 1_000_003 + repeat * 10_007 + turn
            gen = one(question, turn, answers, seed)
            answers.append(tokenizer.decode(gen.tokens, skip_special_tokens=True) if tokenizer else "")
            key = {"question_id": question.question_id, "category": question.category, "turn": turn,
                   "repeat": repeat, "seed": seed}
            rows.append({**identity, **key, **generation_row(gen), "answer": answers[-1],
                         **gpu_memory(cfg.runtime.device)})
            steps += [{"config_hash": identity["config_hash"], **key, **s} for s in step_rows(gen)]
            progress.update(gen)
        if spec is not None:  # accuracy of the final answer, in the same row as its speed
            rows[-1]["correct"] = score_answer(spec.scorer, answers[-1], question,
                                               allow_code_execution=cfg.dataset.execute_code)
        store.add(rows, steps)
        progress.advance()
    progress.close()


class Progress:
    """A tqdm bar with live tokens/s (prefill excluded), or nothing."""

    def __init__(self, total: int, enabled: bool, label: str):
        self.bar = None
        self.tokens, self.seconds = 0, 0.0
        if enabled and total:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=label, unit="q")

    def update(self, gen: Generation) -> None:
        if self.bar is None:
            return
        self.tokens += len(gen.tokens)
        self.seconds += gen.decode_s
        self.bar.set_postfix(tok_s=f"{self.tokens / max(self.seconds, 1e-9):.1f}", tau=f"{gen.tau:.2f}")

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
