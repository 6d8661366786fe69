# Session 55 (either GPU, carry [".whl"], ~2 min): ws_probe.py at the 70B gate/up and down shapes, M = 1, 16, 64.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import triton; print('triton', triton.__version__)"
cd results/h200/2026-12-07/session55/ws_probe
timeout 150 python3 ws_probe.py --n 57344 --k 8192 2>&1 | tee "$OUT/gate_up.log"
timeout 120 python3 ws_probe.py --n 8192 --k 28672 2>&1 | tee "$OUT/down.log"
