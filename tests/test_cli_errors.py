"""Bad inputs stop before any model is built with one message naming the setting (exit 2, no traceback, nothing
written); Ctrl-C keeps finished questions only and a rerun resumes to the rows of an uninterrupted run."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
from hydra import compose, initialize_config_dir

from specbench.errors import EXIT_INTERRUPTED, EXIT_USAGE, ConfigError, DatasetFileError, DeviceError, reported
from specbench.runner.config import register_schemas
from specbench.runner.preflight import check_memory, preflight
from specbench.runner.run import run as run_job
from specbench.runner.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]
register_schemas()


def config(*overrides: str):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=list(overrides))


@pytest.fixture
def offline(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def lines(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return f"dataset.path={path}"


@pytest.mark.parametrize("override, error, says", [
    ("model.source=/nope", ConfigError, "model.source=/nope: model source '/nope' is neither an existing folder"),
    ("quant.scheme=bogus", ConfigError, "quant.scheme=bogus is not a quantization scheme; use one of: none"),
    ("model.source=org/x", ConfigError, "`hf download ID"),
    ("quant=w4a16 quant.backend=gemlite", DeviceError, "needs a CUDA GPU (quant.backend=gemlite)"),
])
def test_bad_settings_name_the_setting(override, error, says, offline, monkeypatch):
    monkeypatch.setattr("specbench.runner.preflight.gpu_present", lambda: False)
    with pytest.raises(error) as found:
        preflight(config(*override.split()))
    assert says in str(found.value)


def test_a_gpu_experiment_on_a_cpu_names_its_smoke_variant(monkeypatch):
    monkeypatch.setattr("specbench.runner.preflight.gpu_present", lambda: False)
    with pytest.raises(DeviceError, match=r"hierspec_70b needs a CUDA GPU .* \+experiment=smoke/hierspec_70b"):
        preflight(config("+experiment=hierspec_70b"), experiment="hierspec_70b")


@pytest.mark.parametrize("name, text, says", [
    ("no_turns.jsonl", '{"question_id": 1, "category": "x", "prompt": ["hi"]}\n', "lacks the field 'turns'"),
    ("empty.jsonl", "\n", "is empty"),
    ("malformed.jsonl", '{"question_id": 1, "category": "x", "turns": ["hi"]}\n{"question_id": 2, "cat\n',
     ':2: not a JSON line (Invalid control character at, column 24): \'{"question_id": 2, "cat\''),
])
def test_bad_dataset_files(tmp_path, name, text, says):
    with pytest.raises(DatasetFileError) as found:
        preflight(config(lines(tmp_path, name, text)))
    assert says in str(found.value)


def test_memory_estimate_before_allocating():
    cfg = config("model=llama3_8b", "model.shape_only=true", "compare=[]", "baseline=false", "drafter=ngram",
                 "runtime.max_seq_len=8192")
    check_memory(cfg, free=40 * 2**30)  # 8B fp32: 30 GiB of weights (lower bound) + 1 GiB of cache
    with pytest.raises(DeviceError, match=r"needs at least 3[0-9]\.\d GiB .* but cpu has 16\.0 GiB free"):
        check_memory(cfg, free=16 * 2**30)
    w4 = config("model=llama3_8b", "quant=w4a16", "runtime.dtype=bf16", "compare=[]", "runtime.max_seq_len=8192")
    check_memory(w4, free=7 * 2**30)  # 4-bit linears, 16-bit embeddings and cache
    with pytest.raises(DeviceError):
        check_memory(w4, free=4 * 2**30)
    # the target kept loaded from the previous job of this process needs no more room; its drafter still does
    sp = config("model=llama3_8b", "quant=w4a16", "runtime.dtype=bf16", "compare=[]", "drafter=draft_model",
                "drafter.model.source=meta-llama/Llama-3.2-1B-Instruct", "runtime.max_seq_len=8192")
    check_memory(sp, free=3 * 2**30, target_loaded=True)  # the 1B draft: 2.3 GiB + 0.25 GiB of cache
    with pytest.raises(DeviceError, match="more .*the target is already loaded"):
        check_memory(sp, free=2 * 2**30, target_loaded=True)
    with pytest.raises(DeviceError):
        check_memory(sp, free=3 * 2**30)  # the 8B target's 6.2 GiB too
    with pytest.raises(DeviceError):  # the real check against this machine: 70B at 10M tokens fits nowhere
        preflight(config("model=llama3_70b", "model.shape_only=true", "runtime.max_seq_len=10000000"))


def test_reported_errors_exit_with_one_message(capsys, monkeypatch):
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    with pytest.raises(SystemExit) as stopped, reported(lambda: "nothing saved"):
        raise ConfigError("quant.scheme=bogus is not a quantization scheme")
    err = capsys.readouterr().err
    assert stopped.value.code == EXIT_USAGE and err.startswith("specbench: error: quant.scheme=bogus")
    assert "Traceback" not in err and len(err.splitlines()) == 2
    with pytest.raises(SystemExit) as stopped, reported(lambda: "Saved 2 finished questions."):
        raise KeyboardInterrupt
    assert stopped.value.code == EXIT_INTERRUPTED and "Saved 2 finished questions" in capsys.readouterr().err
    with pytest.raises(RuntimeError), reported(lambda: ""):  # a bug keeps its traceback
        raise RuntimeError("bug")
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    with pytest.raises(ConfigError), reported(lambda: ""):
        raise ConfigError("shown with its traceback")


def specbench(*args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HYDRA_FULL_ERROR": "0"}
    return subprocess.Popen([sys.executable, "-m", "specbench", *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def test_command_line_bad_input(tmp_path):
    done = specbench("model.source=/nope", f"output.root={tmp_path / 'results'}", f"hydra.run.dir={tmp_path}/h")
    out, err = done.communicate(timeout=300)
    assert done.returncode == EXIT_USAGE and "Traceback" not in err + out
    assert err.strip().splitlines()[0].startswith("specbench: error: model.source=/nope")
    assert not (tmp_path / "results").exists()


JOB = ["drafter=ngram", "compare=[]", "baseline=false", "timing.warmup=0", "output.progress=false",
       "dataset.max_new_tokens=24", "dataset.question_end=6", "runtime.threads=1"]


def rows(root: Path) -> pd.DataFrame:
    """The result rows under ``root``, compacted or still in parts (an interrupted run's)."""
    frame = pd.concat([ResultStore(p.parent).results for p in root.rglob("config.yaml")])
    return frame.sort_values(["question_id", "turn"])[["question_id", "turn", "repeat", "new_tokens", "answer"]]


@pytest.mark.slow  # a CLI run in a subprocess, interrupted and resumed: ~25 s on two cores
def test_ctrl_c_keeps_finished_questions_and_a_rerun_resumes(tmp_path):
    root = tmp_path / "results"
    job = [*JOB, f"output.root={root}", f"hydra.run.dir={tmp_path}/h"]
    run = specbench(*job, start_new_session=True)
    deadline = time.time() + 240
    while not list(root.rglob("results.parts/*.parquet")) and time.time() < deadline and run.poll() is None:
        time.sleep(0.2)
    assert run.poll() is None, "the run finished before it could be interrupted"
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=120)
    assert run.returncode == EXIT_INTERRUPTED and "Traceback" not in err, err
    assert "interrupted. Saved" in err and "Rerun the same command to resume" in err
    cut = rows(root)
    two_turns = {2, 6, 9, 13}  # specbench_mini's two-turn questions
    assert 0 < cut.question_id.nunique() < 6
    for question, turns in cut.groupby("question_id").size().items():  # complete questions only
        assert turns == (2 if int(question) in two_turns else 1)
    rerun = specbench(*job)
    assert rerun.wait(timeout=300) == 0
    threads = torch.get_num_threads()
    try:  # the uninterrupted run, in this process (a start costs seconds)
        run_job(config(*JOB, f"output.root={tmp_path / 'once'}"))
    finally:
        torch.set_num_threads(threads)
    pd.testing.assert_frame_equal(rows(root).reset_index(drop=True), rows(tmp_path / "once").reset_index(drop=True))


def test_debug_flag_switches_tracebacks_on(monkeypatch):
    from specbench.errors import debugging, take_debug_flag

    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    assert take_debug_flag(["model=tiny"]) == ["model=tiny"] and not debugging()
    assert take_debug_flag(["--debug", "model=tiny"]) == ["model=tiny"] and debugging()
