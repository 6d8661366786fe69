"""``python -m specbench --help``: what the command does, its main commands, config groups, options, examples."""

from __future__ import annotations

from specbench.runner.config_reference import defaults, options

USAGE = "usage: python -m specbench [GROUP=OPTION ...] [GROUP.KEY=VALUE ...] [-m] [--debug] [--cfg job]"
ABOUT = """\
Measures speculative decoding (n-gram, draft model, EAGLE-2, HierSpec, layer skip) against the autoregressive
baseline on one target model, optionally quantized, over a prompt set; writes parquet rows per question under
output.root/output.name/<config hash>/ (rerunning resumes) and prints a summary. With no arguments it runs the
shipped tiny model family offline on a CPU."""
COMMANDS = [
    ("python -m specbench", "the default job: AR, n-gram, draft model and EAGLE-2 on the tiny family (CPU)"),
    ("python -m specbench -m +experiment=NAME", "a paper experiment (a Hydra sweep; NAME below)"),
    ("python -m specbench -m +experiment=smoke/NAME", "its seconds-long CPU smoke variant"),
    ("python -m specbench.analysis tables|plots", "paper tables / figures from results/ (make tables, make plots)"),
    ("python -m specbench.datasets list|download NAME", "the known prompt sets; fetch one into the cache"),
    ("python -m specbench.runner.config_reference", "regenerate docs/configuration.md (every setting)"),
]
FLAGS = [
    ("-m, --multirun", "sweep: comma-separated values run one job each (drafter.num_tokens=3,5,7)"),
    ("--debug", "show Python tracebacks (same as HYDRA_FULL_ERROR=1)"),
    ("--cfg job", "print the composed config and exit"),
    ("--hydra-help", "Hydra's own options (run dirs, sweepers, logging)"),
]
EXAMPLES = [
    "python -m specbench drafter=eagle 'compare=[]' quant=w8a8_int8",
    "python -m specbench -m drafter=ngram drafter.num_tokens=3,5,7,9",
    "python -m specbench model=llama3_8b model.shape_only=true dataset=synthetic runtime=cuda quant=w4a16 "
    "quant.backend=gemlite",
    "python -m specbench -m +experiment=quasar_sensitivity hydra/launcher=gpus   # one job per GPU",
    "python -m specbench output.root=/tmp/runs dataset.path=my_questions.jsonl  # your own prompts",
]
GROUPS = ["model", "quant", "drafter", "dataset", "timing", "runtime", "output"]


def columns(pairs: list[tuple[str, str]]) -> list[str]:
    width = max(len(a) for a, _ in pairs) + 2
    return [f"  {a.ljust(width)}{b}" for a, b in pairs]


def render() -> str:
    chosen = defaults()
    groups = [(g, ", ".join(f"[{o}]" if o == chosen.get(g) else o for o in options(g))) for g in GROUPS]
    groups.insert(3, ("compare", "a list of drafter options, [draft_model, eagle]; settings: compare.NAME.KEY"))
    experiments = [o for o in options("experiment") if not o.startswith("smoke/")]
    groups += [("+experiment", ", ".join(experiments)), ("hydra/launcher", ", ".join(options("hydra/launcher")))]
    lines = [USAGE, "", ABOUT, "", "Main commands:", *columns(COMMANDS), "",
             "Config groups (GROUP=OPTION; [default]):", *columns(groups), "",
             "Settings: GROUP.KEY=VALUE, e.g. dataset.question_end=10 runtime.max_seq_len=4096 timing.repeats=3;",
             "every setting with its type, default and meaning: docs/configuration.md.", "",
             "Options:", *columns(FLAGS), "", "Examples:", *[f"  {e}" for e in EXAMPLES], "",
             "Exit codes: 0 done; 1 Hydra could not compose the config (e.g. an unknown GROUP=OPTION: its message "
             "lists the options);", "  2 a setting or input to change (the message says which); 130 interrupted "
             "(rerunning resumes).", "Docs: README.md, docs/ (timing, quantization, datasets, analysis, configuration)."]
    return "\n".join(lines) + "\n"
