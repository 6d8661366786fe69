STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
ROUNDS=2 TIMEOUT_S=100 bash benchmarks/same_run.sh stack python3 -m benchmarks.bench_quant_linear --models llama-3-70b llama-3-8b --backends triton torch --schemes w4a16 --ms 1 16 32 64 --dtype float16 --budget-s 90
for f in "$OUT"/stack_*[12]; do echo "== $f"; grep -E "^\| llama" "$f"/*.md | cut -d"|" -f2,3,4,7-12; done
timeout 150 python3 -m benchmarks.bench_quant_linear --models llama-3-70b --backends triton --schemes w4a8 w8a8_int8 --ms 1 16 64 --no-dense --budget-s 120 --out $OUT/a8 > $OUT/a8.log 2>&1; echo "a8 rc $? $(( $(date +%s) - t0 )) s"
grep -E "M=[0-9]+: stack|share" $OUT/a8.log
tar czf "$OUT/res.tgz" -C "$OUT" stack_new1 stack_new2 stack_old1 stack_old2 a8 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
