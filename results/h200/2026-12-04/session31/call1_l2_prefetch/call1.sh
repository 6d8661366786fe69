STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
timeout 120 python3 -m pytest -q -x tests/test_quant_gpu.py -k "l2 or chained" > "$OUT/pytest.log" 2>&1; echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
B="python3 -m benchmarks.bench_l2_prefetch"
timeout 150 $B --out $OUT/pf8 --models llama-3-8b --ms 1 32 --fractions 0 0.25 0.5 1 > "$OUT/pf8.log" 2>&1; echo "pf8 rc $? $(( $(date +%s) - t0 )) s"
grep -E "fraction|built|Error|error" "$OUT/pf8.log" | tail -20
timeout 100 $B --out $OUT/pf8g --models llama-3-8b --ms 1 32 --fractions 0 0.5 1 --gaps 2 8 2 2 > "$OUT/pf8g.log" 2>&1; echo "pf8g rc $? $(( $(date +%s) - t0 )) s"
grep -E "fraction|Error|error" "$OUT/pf8g.log" | tail -12
timeout 150 $B --out $OUT/pf70 --models llama-3-70b --layers 20 --ms 1 8 32 --fractions 0 0.25 0.5 > "$OUT/pf70.log" 2>&1; echo "pf70 rc $? $(( $(date +%s) - t0 )) s"
grep -E "fraction|built|Error|error" "$OUT/pf70.log" | tail -20
tar czf "$OUT/res.tgz" -C "$OUT" pf8 pf8g pf70 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
