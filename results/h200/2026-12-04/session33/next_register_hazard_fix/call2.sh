# Session 33 (prepared). The 70B and 8B W4A16 stacks, the fixed kernel against f5d6121 (base/ as in call1.sh), two
# processes each (~8 min).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
ROUNDS=2 TIMEOUT_S=110 bash benchmarks/same_run.sh stack python3 -m benchmarks.bench_quant_linear \
  --models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --ms 1 16 32 64 --no-dense --dtype float16 --budget-s 45
for f in "$OUT"/stack_*[12]; do echo "== $f"; grep -E "^\| llama" "$f"/*.md | cut -d"|" -f2,3,4,7-12; done
tar czf "$OUT/stack.tgz" -C "$OUT" $(cd "$OUT" && ls -d stack_*[12]) 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
