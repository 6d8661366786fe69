# Session 35, third call if the budget allows (~4 min): session 33's call2 in one round, what the register-hazard fix
# costs: the 70B and 8B W4A16 stacks, this checkout against f5d6121 (base/, made as session 33's call1.sh says).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ROUNDS=1 TIMEOUT_S=110 bash benchmarks/same_run.sh stack python3 -m benchmarks.bench_quant_linear \
  --models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --ms 1 16 32 64 --no-dense --dtype float16 --budget-s 45
for f in "$OUT"/stack_*1; do echo "== $f"; grep -E "^\| llama" "$f"/*.md | cut -d"|" -f2,3,4,7-12; done
tar czf "$OUT/stack.tgz" -C "$OUT" $(cd "$OUT" && ls -d stack_*1) 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
