#!/usr/bin/env bash
# Every GPU benchmark in one call on the device machine (results under $OUT). Wheels missing there (gemlite)
# travel in .whl/. Each benchmark has its own time budget and a hard cap, so the call ends inside 10 minutes.
set -uo pipefail
OUT=${OUT:-bench_out}
. benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv | tee "$OUT/gpu.csv"
python3 -c "import torch, transformers, triton; print('torch', torch.__version__, 'transformers', transformers.__version__, 'triton', triton.__version__)" | tee "$OUT/versions.txt"
timeout 170 python3 -m benchmarks.bench_decode --out "$OUT/decode" --budget-s 140 2>&1 | tee "$OUT/decode.log" | tail -25
timeout 190 python3 -m benchmarks.bench_eq1 --out "$OUT/eq1" --budget-s 160 2>&1 | tee "$OUT/eq1.log" | tail -30
timeout 170 python3 -m benchmarks.bench_quant_linear --out "$OUT/quant" --budget-s 140 2>&1 | tee "$OUT/quant.log" | tail -30
timeout 50 python3 -m pytest -q -x tests/test_quant_gpu.py 2>&1 | tee "$OUT/quant_gpu_tests.log" | tail -5
