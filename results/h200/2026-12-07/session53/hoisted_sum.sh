# Session 53 (either GPU, carry [".whl"], ~5 min; needs `base/` = HEAD before the change, see benchmarks/same_run.sh):
# the split-K sum's partial loads all in flight together (splitk.HOISTED_SUM) against one at a time, the 8B and 70B
# stacks of every Triton scheme at M = 1/16/32/64, two rounds in turns (new, old, new, old).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ROUNDS=${ROUNDS:-2} TIMEOUT_S=${RUN_S:-110} bash benchmarks/same_run.sh stack python3 -m benchmarks.bench_quant_linear \
  --models llama-3-8b llama-3-70b --backends triton --schemes ${SCHEMES:-w4a16 w4a8 w8a8_int8} --dtype float16 \
  --ms 1 16 32 64 --no-dense --budget-s ${BUDGET_S:-95}
for f in "$OUT"/stack_*/quant_linear.json; do
  python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['scheme'], r['group_size'], r['M'], round(r['stack_ms'], 3)) for r in json.load(open(sys.argv[1]))['rows']]" "$f" "$(basename "$(dirname "$f")")"
done
(cd "$OUT" && tar czf stacks.tgz stack_* && rm -rf stack_*)
echo "total $(( $(date +%s) - t0 )) s"
