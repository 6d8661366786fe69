# Session 34: session 33's call1 (GPU tests of the fixed W4A16 kernel, the once-refused 8-warp configs new against
# old; base/ = f5d6121) and the sm_90 heuristic against the generic one (base_heur/ = 6c66b1e) in one call (~9 min).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
timeout 230 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_int4_convert.py tests/test_quant_gpu.py \
  tests/test_wgmma_hazards.py tests/test_buckets.py tests/test_quant_triton_a8_gpu.py tests/test_attention.py \
  > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -5 "$OUT/pytest.log"
P=$PWD/results/h200/2026-12-04/session33/next_register_hazard_fix/probe_8warps.py
for side in new old; do dir=$PWD; [ $side = old ] && dir=$PWD/base
  (cd $dir && PYTHONPATH=$dir timeout 60 python3 $P "$OUT/probe_$side.json" > "$OUT/probe_$side.log" 2>&1)
  echo "probe $side rc $?"; grep '^{' "$OUT/probe_$side.log" | cut -c1-220; done
BASE=base_heur ROUNDS=1 TIMEOUT_S=130 bash benchmarks/same_run.sh heur python3 -m benchmarks.bench_quant_linear \
  --models qwen3-8b --backends triton torch --schemes w4a16 --ms 1 16 32 64 --dtype float16 --budget-s 110
for side in new old; do echo "== heur $side"; grep -E "^\| qwen3-8b|stack|M=" "$OUT/heur_${side}1/quant_linear.md" | head -12; done
tar czf "$OUT/all.tgz" -C "$OUT" --exclude all.tgz . 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
