"""GPU leases (runtime.device=cuda:auto), run-folder locks, and the one-job-per-GPU launcher, all on a CPU.

Leases are taken by real concurrent processes (spawn) on a pool of fake GPUs: each gets its own GPU, a process waits
while all are held, a crashed holder frees its GPU, an all-busy pool fails with a clear error after its timeout.
"""

from __future__ import annotations

import importlib.util
import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from specbench.runner import gpu_pool
from specbench.runner.config import config_hash
from specbench.runner.gpu_pool import NoFreeGPU, acquire_gpu, visible_gpus
from specbench.runner.locks import run_folder_lock, try_lock, unlock

ROOT = Path(__file__).resolve().parents[1]
SPAWN = mp.get_context("spawn")


def _hold(gpus, lock_dir, timeout_s, out, release, crash=False):
    """Child process: lease a GPU, report it, hold it until ``release`` is set (or die without cleanup)."""
    out.put(("started", None, 0.0))
    start = time.monotonic()
    try:
        lease = acquire_gpu(gpus, lock_dir, timeout_s=timeout_s, poll_s=0.05)
    except NoFreeGPU as err:
        out.put(("timeout", str(err), time.monotonic() - start))
        return
    out.put(("leased", lease.gpu, time.monotonic() - start))
    if crash:
        out.close()
        out.join_thread()  # flush the report, then die
        os._exit(1)  # no cleanup: only the kernel can drop the lock
    release.wait(30)


def _start(gpus, lock_dir, timeout_s=20.0, crash=False):
    out, release = SPAWN.Queue(), SPAWN.Event()
    proc = SPAWN.Process(target=_hold, args=(gpus, str(lock_dir), timeout_s, out, release, crash))
    proc.start()
    assert out.get(timeout=60)[0] == "started"  # spawned and about to lease
    return proc, out, release


def _get(out, timeout=30):
    return out.get(timeout=timeout)


def test_concurrent_leases_get_distinct_gpus_and_a_third_waits(tmp_path):
    a, out_a, rel_a = _start(2, tmp_path)
    b, out_b, rel_b = _start(2, tmp_path)
    (status_a, gpu_a, _), (status_b, gpu_b, _) = _get(out_a), _get(out_b)
    assert status_a == status_b == "leased" and {gpu_a, gpu_b} == {"0", "1"}
    c, out_c, rel_c = _start(2, tmp_path)
    time.sleep(0.5)
    assert out_c.empty() and c.is_alive()  # both GPUs held: the third waits
    rel_a.set()
    a.join(10)
    status, gpu, waited = _get(out_c)
    assert (status, gpu) == ("leased", gpu_a) and waited >= 0.5  # a's GPU, once a exited
    for rel, proc in ((rel_b, b), (rel_c, c)):
        rel.set()
        proc.join(10)
        assert proc.exitcode == 0


def test_third_lease_gets_the_gpu_its_holder_gave_up(tmp_path):
    a, out_a, rel_a = _start(["7", "9"], tmp_path)
    assert _get(out_a)[:2] == ("leased", "7")  # the first free GPU, named by its CUDA_VISIBLE_DEVICES id
    b, out_b, rel_b = _start(["7", "9"], tmp_path)
    assert _get(out_b)[:2] == ("leased", "9")
    c, out_c, rel_c = _start(["7", "9"], tmp_path)
    time.sleep(0.5)
    rel_b.set()
    b.join(10)
    assert _get(out_c)[:2] == ("leased", "9")
    assert {p.name for p in tmp_path.iterdir()} == {"gpu-7.lock", "gpu-9.lock"}
    for rel, proc in ((rel_a, a), (rel_c, c)):
        rel.set()
        proc.join(10)


def test_a_crashed_holder_frees_its_gpu(tmp_path):
    a, out_a, _ = _start(1, tmp_path, crash=True)
    assert _get(out_a)[:2] == ("leased", "0")
    a.join(10)
    assert a.exitcode == 1
    b, out_b, rel_b = _start(1, tmp_path, timeout_s=5.0)
    status, gpu, waited = _get(out_b)
    assert (status, gpu) == ("leased", "0") and waited < 2.0
    rel_b.set()
    b.join(10)


def test_all_busy_times_out_with_a_clear_error(tmp_path):
    a, out_a, rel_a = _start(1, tmp_path)
    assert _get(out_a)[:2] == ("leased", "0")
    start = time.monotonic()
    with pytest.raises(NoFreeGPU) as err:
        acquire_gpu(1, tmp_path, timeout_s=0.3, poll_s=0.05)
    assert 0.3 <= time.monotonic() - start < 5.0
    message = str(err.value)
    assert "all 1 GPU(s)" in message and "runtime.gpu_wait_s" in message and str(tmp_path) in message
    assert f"pid {a.pid}" in message  # names the holder
    rel_a.set()
    a.join(10)
    lease = acquire_gpu(1, tmp_path, timeout_s=0.0)  # free again
    assert lease.gpu == "0"
    unlock(lease.fd)


def test_no_visible_gpu_is_an_error(tmp_path):
    with pytest.raises(RuntimeError, match="sees no GPU"):
        acquire_gpu([], tmp_path)


def test_visible_gpus_reads_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, 5,GPU-abc")
    assert visible_gpus() == ["3", "5", "GPU-abc"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,-1,4")  # CUDA stops at the first invalid entry
    assert visible_gpus() == ["2"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert visible_gpus() == []


def test_default_lock_dir_is_per_host_and_slurm_job(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    plain = gpu_pool.default_lock_dir()
    assert plain.parent == tmp_path / "specbench" / "gpu-locks"
    monkeypatch.setenv("SLURM_JOB_ID", "123")
    assert gpu_pool.default_lock_dir() == plain.with_name(plain.name + "-slurm123")


def test_cuda_auto_hashes_like_cuda_and_lease_settings_are_not_identity():
    base = OmegaConf.create({"runtime": {"device": "cuda", "seed": 0}, "output": {"root": "x"}})
    auto = OmegaConf.merge(base, {"runtime": {"device": "cuda:auto", "gpu_lock_dir": "/tmp/l", "gpu_wait_s": 5}})
    assert config_hash(auto) == config_hash(base)
    assert config_hash(OmegaConf.merge(base, {"runtime": {"device": "cuda:1"}})) != config_hash(base)


def test_resolve_device_leaves_other_devices_alone(monkeypatch):
    monkeypatch.setattr(gpu_pool, "_lease", None)
    for device in ("cpu", "cuda", "cuda:1"):
        assert gpu_pool.resolve_device(OmegaConf.create({"device": device})) == device
    assert gpu_pool.current_lease() is None


def test_resolve_cuda_auto_leases_and_narrows(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_pool, "_lease", None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    held = try_lock(tmp_path / "gpu-4.lock")  # another process's lease on the first GPU
    try:
        runtime = OmegaConf.create({"device": "cuda:auto", "gpu_lock_dir": str(tmp_path), "gpu_wait_s": 1})
        assert gpu_pool.resolve_device(runtime) == "cuda"
        lease = gpu_pool.current_lease()
        assert (lease.gpu, lease.index, lease.narrowed) == ("6", 1, True)
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "6"  # the process now sees only its GPU
        assert gpu_pool.resolve_device(runtime) == "cuda" and gpu_pool.current_lease() is lease  # one per process
        unlock(lease.fd)
    finally:
        unlock(held)


def test_run_folder_lock_is_exclusive(tmp_path):
    with run_folder_lock(tmp_path) as held:
        assert held
        with run_folder_lock(tmp_path, wait=False) as other:  # another open file: a second job
            assert other is False
    with run_folder_lock(tmp_path, wait=False) as again:
        assert again


# -------------------------------------------------------------------------- runs sharing a folder, the launcher

@pytest.fixture
def smoke_cfg():
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from specbench.runner.config import register_schemas

    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        yield lambda *o: compose("config", overrides=["+experiment=smoke/compat_llama3_8b", *o])
    GlobalHydra.instance().clear()


def test_a_busy_baseline_is_measured_last_and_resumed(smoke_cfg, tmp_path):
    """Another job measuring the shared AR baseline: this job measures its drafter first, then waits and resumes."""
    import threading

    from specbench.runner.run import method_configs, run, run_dir

    cfg = smoke_cfg(f"output.root={tmp_path}", "experiment/cell=tiny_fp32", "drafter.tree_size=4")
    ar_folder, sd_folder = (run_dir(m) for m in method_configs(cfg))
    ar_folder.mkdir(parents=True)
    held = try_lock(ar_folder / ".lock")  # the other job
    done = []
    worker = threading.Thread(target=lambda: done.append(run(cfg)))
    worker.start()
    deadline = time.monotonic() + 60
    while not (sd_folder / "results.parquet").exists() and worker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (sd_folder / "results.parquet").exists() and not (ar_folder / "results.parquet").exists()
    assert worker.is_alive()  # waiting for the baseline's lock
    unlock(held)
    worker.join(60)
    assert done == [[ar_folder, sd_folder]]
    ar = pd.read_parquet(ar_folder / "results.parquet")
    assert ar.question_id.nunique() == 2 and not ar.duplicated(["question_id", "turn", "repeat"]).any()


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("hydra_plugins.hydra_joblib_launcher") is None,
                    reason="needs the multigpu extra (hydra-joblib-launcher)")
def test_gpus_launcher_runs_jobs_in_parallel_without_collisions(tmp_path):
    """Two sweep points at once through hydra/launcher=gpus (on CPU): each writes its own folder, the AR baseline
    they share is measured once, no row is duplicated."""
    cmd = [sys.executable, "-m", "specbench", "-m", "+experiment=smoke/compat_llama3_8b",
           "experiment/cell=tiny_fp32", "drafter.tree_size=4,8", "hydra/launcher=gpus", "hydra.launcher.n_jobs=2",
           f"output.root={tmp_path / 'runs'}", f"hydra.sweep.dir={tmp_path / 'multirun'}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Joblib.Parallel(n_jobs=2" in proc.stderr + proc.stdout
    files = sorted((tmp_path / "runs" / "smoke_compat_llama3_8b").glob("*/results.parquet"))
    assert len(files) == 3  # one AR baseline + two EAGLE tree sizes
    rows = {f.parent.name: pd.read_parquet(f) for f in files}
    drafters = sorted(r.drafter.iloc[0] for r in rows.values())
    assert drafters == ["eagle", "eagle", "none"]
    for name, frame in rows.items():
        assert not frame.duplicated(["question_id", "turn", "repeat"]).any(), name
        assert frame.question_id.nunique() == 2 and set(frame.config_hash) == {name}
        steps = pd.read_parquet(tmp_path / "runs" / "smoke_compat_llama3_8b" / name / "steps.parquet")
        assert frame.steps.sum() == len(steps)  # the step log belongs to the same measurement
    logs = [p.read_text() for p in sorted((tmp_path / "multirun").glob("*/__main__.log"))]
    assert len(logs) == 2
    # one job measured the shared baseline; the other found it measured (after measuring its own drafter)
    assert sum("every question already measured" in log for log in logs) == 1, logs


def test_missing_launcher_plugin_names_the_extra(monkeypatch):
    from specbench import __main__ as entry

    monkeypatch.setattr(entry.importlib.util, "find_spec", lambda name: None)
    message = entry.missing_launcher(["-m", "hydra/launcher=gpus"])
    assert message and 'pip install -e ".[multigpu]"' in message
    assert "[slurm]" in entry.missing_launcher(["hydra/launcher=slurm"])
    assert entry.missing_launcher(["hydra/launcher=basic", "runtime=cpu"]) is None


def test_gpus_launcher_config_counts_gpus(monkeypatch):
    import yaml

    from specbench.runner.config import register_resolvers

    data = yaml.safe_load((ROOT / "conf" / "hydra" / "launcher" / "gpus.yaml").read_text())
    assert data["defaults"] == ["joblib"] and data["n_jobs"] == "${specbench_gpus:}"
    register_resolvers()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,3,5")
    assert OmegaConf.create({"n": data["n_jobs"]}).n == 3
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU: one job at a time
    assert OmegaConf.create({"n": data["n_jobs"]}).n == 1
    assert yaml.safe_load((ROOT / "conf" / "runtime" / "cuda.yaml").read_text())["device"] == "cuda:auto"
