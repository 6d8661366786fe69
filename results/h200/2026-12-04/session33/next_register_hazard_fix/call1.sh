# Session 33 (prepared, no device lent). The W4A16 kernel with every product subtracted (a995dae) against the code
# before it (f5d6121), same call. Make base/ first:
#   mkdir base && git archive f5d6121 specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets && mkdir base/specbench/assets
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
timeout 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_int4_convert.py tests/test_quant_gpu.py \
  tests/test_wgmma_hazards.py tests/test_buckets.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -4 "$OUT/pytest.log"
P=$PWD/results/h200/2026-12-04/session33/next_register_hazard_fix/probe_8warps.py
for side in new old; do dir=$PWD; [ $side = old ] && dir=$PWD/base
  (cd $dir && PYTHONPATH=$dir timeout 60 python3 $P "$OUT/probe_$side.json" > "$OUT/probe_$side.log" 2>&1)
  echo "probe $side rc $?"; grep '^{' "$OUT/probe_$side.log" | cut -c1-200; done
ROUNDS=2 TIMEOUT_S=110 bash benchmarks/same_run.sh stack python3 -m benchmarks.bench_quant_linear \
  --models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --ms 1 16 32 64 --no-dense --dtype float16 --budget-s 45
for f in "$OUT"/stack_*[12]; do echo "== $f"; grep -E "^\| *(triton|w4a16)" "$f".log | cut -c1-200 | head -12; done
tar czf "$OUT/stack.tgz" -C "$OUT" $(cd "$OUT" && ls -d stack_*[12]) 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
