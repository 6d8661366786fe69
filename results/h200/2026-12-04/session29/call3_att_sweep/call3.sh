STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
timeout 60 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_attention.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -1 "$OUT/pytest.log"
for c in "576 128" "576 384" "4096 1024"; do
  set -- $c
  timeout 100 python3 -m benchmarks.bench_attention --out "$OUT/att_$1_$2" --slots $1 --context $2 --merge-rows 1 \
    --splits 1 2 4 8 16 --row-blocks 16 32 64 128 > "$OUT/att_$1_$2.log" 2>&1
  echo "att $1 $2 rc $? $(( $(date +%s) - t0 )) s"; grep '^{' "$OUT/att_$1_$2.log" | sed 's/"sdpa_us.*//'
done
