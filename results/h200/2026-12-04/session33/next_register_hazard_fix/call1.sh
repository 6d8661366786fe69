# Session 33 (prepared, no device lent). The W4A16 kernel with every product subtracted (a995dae) against the code
# before it (f5d6121): GPU tests, and the three 8-warp configs once refused, new against old (~5 min). Make base/ first:
#   mkdir base && git archive f5d6121 specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets && mkdir base/specbench/assets
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
timeout 240 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_int4_convert.py tests/test_quant_gpu.py \
  tests/test_wgmma_hazards.py tests/test_buckets.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -4 "$OUT/pytest.log"
P=$PWD/results/h200/2026-12-04/session33/next_register_hazard_fix/probe_8warps.py
for side in new old; do dir=$PWD; [ $side = old ] && dir=$PWD/base
  (cd $dir && PYTHONPATH=$dir timeout 60 python3 $P "$OUT/probe_$side.json" > "$OUT/probe_$side.log" 2>&1)
  echo "probe $side rc $?"; grep '^{' "$OUT/probe_$side.log" | cut -c1-200; done
echo "total $(( $(date +%s) - t0 )) s"
