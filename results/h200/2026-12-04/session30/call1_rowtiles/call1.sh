STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
T="python3 -m specbench.quantization.tune --gpu h200 --schemes w4a16 --models llama-3-8b llama-3-70b --buckets 32 64 --groups 128 --around-entry --out $OUT/h200.json"
timeout 230 $T --budget-s 210 > "$OUT/tune1.log" 2>&1; echo "tune1 rc $? $(( $(date +%s) - t0 )) s"
grep -E "^\[" "$OUT/tune1.log" | cut -c1-330
cp "$OUT/h200.json" "$OUT/h200_round1.json"
timeout 170 $T --budget-s 150 > "$OUT/tune2.log" 2>&1; echo "tune2 rc $? $(( $(date +%s) - t0 )) s"
grep -E "^\[" "$OUT/tune2.log" | cut -c1-330
cp "$OUT/h200.json" specbench/quantization/tables/h200.json
ROUNDS=2 TIMEOUT_S=60 bash benchmarks/same_run.sh stack python3 -m benchmarks.bench_quant_linear --models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --ms 1 16 32 64 --no-dense --dtype float16 --budget-s 40
for f in "$OUT"/stack_*[12]; do echo "== $f"; grep -E "triton" "$f"/*.md | head -12; done
tar czf "$OUT/res.tgz" -C "$OUT" stack_new1 stack_new2 stack_old1 stack_old2 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
