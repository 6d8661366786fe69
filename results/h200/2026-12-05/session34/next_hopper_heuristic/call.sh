# Session 34 (prepared, no device lent). The sm_90 W4A16 heuristic (c26e255) against the generic one (base/, the
# code before it), on shapes the H200 table lacks (Qwen3-8B's W4A16 linears), fp16, tinygemm beside (~4 min). The tune
# runs after it (session 33's call3.sh) record the new heuristic's time beside every tuned entry (heuristic_ms). Make base/:
#   mkdir base && git archive 6c66b1e specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets && mkdir base/specbench/assets
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
ROUNDS=1 TIMEOUT_S=150 bash benchmarks/same_run.sh heur python3 -m benchmarks.bench_quant_linear \
  --models qwen3-8b --backends triton torch --schemes w4a16 --ms 1 16 32 64 --dtype float16 --budget-s 130
echo "total $(( $(date +%s) - t0 )) s"
