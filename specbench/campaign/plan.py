"""The campaign's runs as data: every shape-only timing run that fills a paper cell, as a Hydra override list.

Each run names the experiment whose table it fills (``+experiment=...``, so ``output.name`` matches the manifest's
filter), its target cell and method, the replayed tau per task with the source of each value, and settings that
make a real-weight cell shape-only. Runs are listed most valuable first. Config keys live in ``KEYS`` so that a
renamed config field is a one-line change here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

CONF = Path(__file__).resolve().parents[2] / "conf"

KEYS = {  # config key -> its current Hydra name
    "shape_only": "model.shape_only",
    "acceptance": "timing.acceptance",
    "head": "drafter.head",
    "draft_shape_only": "drafter.model.shape_only",
    "synthetic": "dataset.synthetic",
    "questions": "dataset.synthetic_questions",
    "tasks": "dataset.categories",
    "new_tokens": "dataset.max_new_tokens",
    "max_seq_len": "runtime.max_seq_len",
    "tau": "timing.replay_tau",
    "tau_by_task": "timing.replay_tau_by_task",
    "inner_tau": "timing.replay_inner_tau",
    "tau_source": "timing.replay_source",
    "temperature": "runtime.temperature",
    "root": "output.root",
    "runtime": "runtime",
}


@dataclass(frozen=True)
class Tau:
    """A replayed accept length and where it comes from (label as in published-tau.md)."""

    value: float
    source: str


@dataclass(frozen=True)
class Run:
    """One Hydra job of the campaign."""

    id: str
    experiment: str
    target: str  # a key of TARGETS (for the time estimate)
    overrides: tuple[str, ...]
    taus: dict = field(default_factory=dict)  # task -> Tau ("*": every task)
    methods: int = 1  # methods the job measures (its AR baseline included)
    tasks: int = 1  # tasks of its dataset
    new_tokens: int = 1024  # the experiment's max_new_tokens

    @property
    def target_cell(self) -> tuple:
        """The target model the run builds: its ``target``, its ``experiment/cell`` override (if any) and its
        ``quant.*`` overrides."""
        return (self.target, next((o for o in self.overrides if o.startswith("experiment/cell=")), None),
                *(o for o in self.overrides if o.startswith("quant.")))

    def source(self) -> str:
        """The source of every tau in the run, for the rows (``timing.replay_source``)."""
        return "; ".join(f"{'every task' if task == '*' else task} {tau.value:g}: {tau.source}"
                         for task, tau in self.taus.items())


# target -> (seconds to build it and warm up, decode tok/s of one method on an H200 without compile, seconds every
# run adds: warm-ups, prefills, session reset): rough, from docs/benchmarks.md, 2026-12-01 (8B AR 154 tok/s
# uncompiled; 70B W4A16 AR 42 tok/s on the tuned Triton kernel, a shape-only 70B + 8B W4A16 HierSpec stack built and
# warmed in about 30 s since its codes are packed on the GPU; session 7's 49 runs: 12 s per 70B run and 4 s per
# Qwen3-8B run beyond their tokens)
TARGETS = {"llama3_8b": (20, 150.0, 4.0), "llama3_70b": (40, 45.0, 12.0), "qwen3_8b": (20, 150.0, 4.0)}

# --- published and derived taus (see /work/shared/docs/published-tau.md) ---
EG2_8B = Tau(4.53, "EAGLE-2 Tab.2 [OCR], Llama-3-8B-Instruct MT-bench, n=60 d=6")
EG2_8B_UB = Tau(4.53, "upper bound: EAGLE-2 Tab.2 [OCR] n=60 value; no tau published for a smaller tree")
EG2_8B_D3 = Tau(3.19, "derived: per-depth acceptance 0.85 fitting EAGLE-2 Tab.2 [OCR] 4.53, kept to depth 3")
SP_PLACEHOLDER = Tau(3.9, "placeholder [?]: no published tau; i.i.d. acceptance 0.8 over 6 drafts")
EG2_70B = Tau(4.16, "EAGLE-2 Tab.2 [OCR], Llama-3-70B-Instruct MT-bench, n=48 d=6")
EG2_70B_UB = Tau(4.16, "upper bound: EAGLE-2 Tab.2 [OCR] n=48 value; no tau published for a smaller tree")
EG2_70B_D3 = Tau(3.0, "derived: per-depth acceptance 0.82 fitting EAGLE-2 Tab.2 [OCR] 4.16, kept to depth 3")
HIERSPEC_PLACEHOLDER = Tau(4.16, "placeholder [?]: no published tau; i.i.d. acceptance 0.8 over ~7 drafts")
HS_D = {3: 3.36, 4: 3.69, 5: 3.95, 6: 4.16}  # conf/experiment/hs_d/*.yaml placeholders
QUASAR_TASKS = {"mt_bench": "spec_bench", "humaneval": "eagle_humaneval", "gsm8k": "eagle_gsm8k",
                "alpaca": "eagle_alpaca", "sum": "eagle_sum"}
QUASAR_T0 = {"ngram": [1.21, 1.36, 1.44, 1.16, 1.19], "quasar": [1.25, 1.41, 1.46, 1.17, 1.15]}
QUASAR_TEMPERATURE = {0.0: (1.33, 1.40), 0.2: (1.31, 1.39), 0.4: (1.30, 1.38), 0.6: (1.29, 1.36), 0.8: (1.28, 1.35)}
QUASAR_GAMMA = {3: (1.35, 1.44), 5: (1.43, 1.46), 7: (1.49, 1.49), 9: (1.52, 1.59)}
QUASAR_SOURCE = "Quasar Tab.1 [P] (OpenPangu-7B, T=0)"
QUASAR_PRUNED = {"prune90": 1.62, "prune75": 1.27, "prune50": 1.03}  # Quasar Tab.5 [P], L over the five tasks

SHAPE_ONLY_TARGET = (f"{KEYS['shape_only']}=true", f"{KEYS['acceptance']}=replay")
SHAPE_ONLY = (*SHAPE_ONLY_TARGET, f"{KEYS['head']}=random")  # with an EAGLE head for the drafter
NGRAM_ON_RANDOM_TOKENS = ("drafter.on_miss=repeat",)  # random tokens never recur: draft gamma tokens every step
LONG_PROMPTS = (f"{KEYS['max_seq_len']}=3072",)  # Spec-Bench summarization prompts (<= 1519) + 1024 new tokens


def _run(id: str, experiment: str, target: str, cell: str | None, method: str | None, taus: dict, *extra: str,
         methods: int = 1, tasks: int = 1, new_tokens: int = 1024) -> Run:
    overrides = [f"+experiment={experiment}", *([f"experiment/cell={cell}"] if cell else []),
                 *([f"experiment/method={method}"] if method else [])]
    return Run(id, experiment, target, (*overrides, *extra), taus, methods, tasks, new_tokens)


def _hierspec_70b() -> list[Run]:
    methods = {"ar": ("l3_70b_ar", Tau(1.0, "autoregressive")), "eg2_3_24": ("l3_70b_eg2_3_24", EG2_70B_D3),
               "hierspec": ("l3_70b_hierspec", HIERSPEC_PLACEHOLDER), "sp6": ("l3_70b_sp6", SP_PLACEHOLDER),
               "eg2_6_48": ("l3_70b_eg2_6_48", EG2_70B), "eg2_6_24": ("l3_70b_eg2_6_24", EG2_70B_UB),
               "eg2_3_48": ("l3_70b_eg2_3_48", EG2_70B_D3)}
    return [_run(f"hierspec_70b/w4a16/{name}", "hierspec_70b", "llama3_70b", "l3_70b_w4a16", method, {"*": tau},
                 *LONG_PROMPTS, tasks=6) for name, (method, tau) in methods.items()]


def _figure4_70b_other_precisions() -> list[Run]:
    methods = {"ar": ("l3_70b_ar", Tau(1.0, "autoregressive")), "eg2_6_48": ("l3_70b_eg2_6_48", EG2_70B),
               "eg2_6_24": ("l3_70b_eg2_6_24", EG2_70B_UB), "eg2_3_48": ("l3_70b_eg2_3_48", EG2_70B_D3),
               "eg2_3_24": ("l3_70b_eg2_3_24", EG2_70B_D3), "sp6": ("l3_70b_sp6", SP_PLACEHOLDER)}
    return [_run(f"hierspec_70b/{cell.removeprefix('l3_70b_')}/{name}", "hierspec_70b", "llama3_70b", cell, method,
                 {"*": tau}, *LONG_PROMPTS, tasks=6)
            for cell in ("l3_70b_w8a8", "l3_70b_w4a8") for name, (method, tau) in methods.items()]


L3_8B_CELLS = ("l3_8b_fp16", "l3_8b_w8a8", "l3_8b_w4a16", "l3_8b_w4a8", "l3_8b_w4a8_g128")
# SpecMQuant's W4A16-g128-Rot: the rotation is folded into the weights, so shape-only it is the W4A16 cell with
# quant.rotated=true (its random head gets the rotated heads' extra h x h linear); the checkpoint's config is not shipped
ROTATED_8B = ("l3_8b_w4a16", "w4a16_rot", ("quant.rotated=true",))
L3_70B_CELLS = ("l3_70b_w8a8", "l3_70b_w4a16", "l3_70b_w4a8", "l3_70b_w4a8_g128")


def _compat(trees: tuple[int, ...], big: bool) -> list[Run]:
    experiment = "compat_llama3_70b" if big else "compat_llama3_8b"
    cells, full = (L3_70B_CELLS, 48) if big else (L3_8B_CELLS, 60)
    exact, bound = (EG2_70B, EG2_70B_UB) if big else (EG2_8B, EG2_8B_UB)
    extra = () if big else SHAPE_ONLY
    variants = [(cell, cell.split("_", 2)[2], ()) for cell in cells] + ([] if big else [ROTATED_8B])
    return [_run(f"{experiment}/{name}/n{n}", experiment, "llama3_70b" if big else "llama3_8b", cell, None,
                 {"mt_bench": exact if n == full else bound}, *extra, *more, f"drafter.tree_size={n}", methods=2)
            for n in trees for cell, name, more in variants]


def _eagle_configs() -> list[Run]:
    methods = {"eg2_6_60": EG2_8B, "eg2_6_30": EG2_8B_UB, "eg2_3_60": EG2_8B_D3, "eg2_3_30": EG2_8B_D3,
               "sp6": SP_PLACEHOLDER}
    cells = ("l3_8b_fp16", "l3_8b_w8a8", "l3_8b_w4a16", "l3_8b_w4a8")
    return [_run(f"eagle_configs/{cell.removeprefix('l3_8b_')}/{m}", "eagle_configs", "llama3_8b", cell,
                 f"l3_8b_{m}", {"mt_bench": tau}, *SHAPE_ONLY,
                 *([f"{KEYS['draft_shape_only']}=true"] if m == "sp6" else []), methods=2)
            for m, tau in methods.items() for cell in cells]


def _drafting_time() -> list[Run]:
    methods = {"sp6": SP_PLACEHOLDER, "eg2_3_24": EG2_70B_D3, "eg2_6_48": EG2_70B, "hierspec": HIERSPEC_PLACEHOLDER}
    return [_run(f"drafting_time/{m}", "drafting_time", "llama3_70b", "l3_70b_w4a16", f"l3_70b_{m}", {"*": tau},
                 *LONG_PROMPTS, tasks=6, new_tokens=256) for m, tau in methods.items()]


def _hierspec_sweep() -> list[Run]:
    return [_run(f"hierspec_sweep/d{d}_d1_{d1}", "hierspec_sweep", "llama3_70b", "l3_70b_w4a16", None,
                 {"*": Tau(tau, f"placeholder [?]: conf/experiment/hs_d/d{d}.yaml")}, f"experiment/hs_d=d{d}",
                 f"experiment/hs_d1=d1_{d1}", *LONG_PROMPTS, tasks=6)
            for d1 in (3, 4) for d, tau in HS_D.items()]


def _eagle3() -> list[Run]:
    """Section 4.4 at 70B (``eagle3_70b``, Spec-Bench) and its first level at 8B (``eagle3``, MT-bench): one run per
    method of each experiment's sweep (AR is a method there: ``baseline: false``)."""
    ar = ("l3_70b_ar", Tau(1.0, "autoregressive"))
    big = {"ar": ar, "eg3_8_48": ("l33_70b_eg3_8_48", Tau(5.63, "EAGLE-3 Tab.1 [P], Llama-3.3-70B-Instruct "
                                                                 "MT-bench, T=0, applied to every task")),
           "hierspec3": ("l33_70b_hierspec3", Tau(4.16, "placeholder [?]: conf/experiment/method/"
                                                          "l33_70b_hierspec3.yaml"))}
    small = {"ar": ar, "eg2_6_60": ("l31_8b_eg2_6_60", Tau(4.05, "EAGLE-3 Tab.1 [P]: EAGLE-2 on "
                                                                 "Llama-3.1-8B-Instruct MT-bench, T=0")),
             "eg3_8_60": ("l31_8b_eg3_8_60", Tau(6.13, "EAGLE-3 Tab.1 [P], Llama-3.1-8B-Instruct MT-bench, T=0"))}
    return [*(_run(f"eagle3_8b/{name}", "eagle3", "llama3_8b", None, method, {"*": tau}) for name, (method, tau)
              in small.items()),
            *(_run(f"eagle3_70b/{name}", "eagle3_70b", "llama3_70b", None, method, {"*": tau}, *LONG_PROMPTS, tasks=6)
              for name, (method, tau) in big.items())]


def _quasar_cell(method: str) -> tuple[str, tuple[str, ...]]:
    return ("q3_8b_bf16", ()) if method == "ngram" else ("q3_8b_w8a8", ("+experiment/method=q3_quasar",))


def _quasar(experiment: str, method: str, task: str, tau: Tau, *extra: str) -> Run:
    cell, method_override = _quasar_cell(method)
    tasks = (f"dataset={QUASAR_TASKS[task]}", *([f"{KEYS['tasks']}=[mt_bench]"] if task == "mt_bench" else []))
    suffix = "/".join(e.split("=")[1] for e in extra)
    return _run(f"{experiment}/{method}/{task}" + (f"/{suffix}" if suffix else ""), experiment, "qwen3_8b", cell,
                None, {task: tau}, *method_override, *tasks, *SHAPE_ONLY_TARGET, *NGRAM_ON_RANDOM_TOKENS, *extra,
                methods=2)


def _quasar_table1() -> list[Run]:
    return [_quasar("quasar_table1", m, task, Tau(QUASAR_T0[m][i], QUASAR_SOURCE), f"{KEYS['temperature']}=0.0")
            for m in ("ngram", "quasar") for i, task in enumerate(QUASAR_TASKS)]


def _quasar_sensitivity() -> list[Run]:
    return [_quasar("quasar_sensitivity", m, "humaneval",
                    Tau(taus[j], f"Quasar Tab.3 [P] K=(1,3) gamma={g} (task assumed HumanEval)"),
                    "experiment/ngram_k=k1_3", f"drafter.num_tokens={g}")
            for g, taus in QUASAR_GAMMA.items() for j, m in enumerate(("ngram", "quasar"))]


def _quasar_temperature() -> list[Run]:
    return [_quasar("quasar_temperature", m, task,
                    Tau(taus[j], f"Quasar Tab.2 [P] T={t}: five-task average, applied to each task"),
                    f"{KEYS['temperature']}={t}")
            for t, taus in QUASAR_TEMPERATURE.items() for j, m in enumerate(("ngram", "quasar"))
            for task in QUASAR_TASKS]


def _quasar_pruning() -> list[Run]:
    out = []
    for method, tau in QUASAR_PRUNED.items():
        source = Tau(tau, f"Quasar Tab.5 [P] {method.removeprefix('prune')}% layers: five-task L, applied to each task")
        for task, dataset in QUASAR_TASKS.items():
            tasks = [f"{KEYS['tasks']}=[mt_bench]"] if task == "mt_bench" else []
            out.append(_run(f"quasar_pruning/{method}/{task}", "quasar_pruning", "qwen3_8b", None, f"q3_{method}",
                            {task: source}, f"dataset={dataset}", *tasks, *SHAPE_ONLY_TARGET, methods=2))
    return out


def _by_target(plan: list[Run]) -> list[Run]:
    """``plan`` with the runs of each target cell together, cells in order of first appearance (a worker builds a
    target once per stretch of runs on it)."""
    order = {c: i for i, c in reversed(list(enumerate(run.target_cell for run in plan)))}
    return sorted(plan, key=lambda run: order[run.target_cell])


def runs() -> list[Run]:
    """Every run, the most cells per GPU second first, each block grouped by target: the 8B shape (Fig. 1 at
    n = 60, Fig. 4, Fig. 2's tree sweep, EAGLE-3's first level), then at 70B Fig. 1 at n = 48, Table 2/3 and Fig. 5,
    Quasar's Tables 1 and 3, Fig. 4 at 70B, Fig. 3's tree sweep, the d x d1 sweep, the EAGLE-3 section at 70B, then
    Quasar's Tables 5 and 2."""
    eagle3 = _eagle3()
    return [*_by_target([*_compat((60,), big=False), *_eagle_configs(), *_compat((10, 20, 30, 40, 50), big=False)]),
            *[r for r in eagle3 if r.experiment == "eagle3"],
            *_by_target([*_compat((48,), big=True), *_hierspec_70b(), *_drafting_time()]),
            *_quasar_table1(), *_quasar_sensitivity(),
            *_by_target([*_figure4_70b_other_precisions(), *_compat((24, 32, 40), big=True), *_hierspec_sweep()]),
            *[r for r in eagle3 if r.experiment == "eagle3_70b"], *_quasar_pruning(), *_quasar_temperature()]
