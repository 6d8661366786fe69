STEPS=none; . benchmarks/device_env.sh 2>/dev/null
python3 - <<'PY'
from specbench.quantization.int4_kernel import KernelConfig
from specbench.quantization.tune import rel_error
cfg = KernelConfig("dot", 128, 128, 8, BM=16, warps=4, stages=3, DEQ=5, uneven=True)
print("rel_error", [rel_error(cfg, 8192, 28672, 128, m, False) for m in (16, 15, 8)])
PY
STEPS=loop70b LOOP70_ARGS="--methods ar,hierspec --repeats 2" LOOP70_TIMEOUT_S=260 bash benchmarks/sd_step_h200.sh 2>&1 | grep -v WARN
grep -E "verify|phase" $OUT/loop70b.log | tail -5
