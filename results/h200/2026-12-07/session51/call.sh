# Session 51's first call (carry [".whl"]), on whichever card comes. H200: session 50's queued tune of the M = 1 and
# 16 buckets with A-B-A stacks and the 70B HierSpec loop, tuned table against committed (~9.5 min). H100: the 70B
# HierSpec loop once with the committed tables (per-graph shares of the bandwidth bound) and the GPU step-replay tests
# that check a graph's bytes (~4 min).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
name=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$name"
case $name in
  *H200*) ONLY=h200 LOOP=1 AROUND= BUCKETS="1 16" BUDGET_S=220 bash results/h200/2026-12-07/session50/tune_stack.sh ;;
  *H100*)
    t0=$(date +%s)
    timeout 300 python3 -m benchmarks.bench_sd_loop --model llama-3-70b-instruct --quant w4a16 --dtype float16 \
      --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 \
      --methods ar,hierspec --repeats 2 --out "$OUT/loop" > "$OUT/loop.log" 2>&1
    echo "loop rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\| " "$OUT/loop/bench_sd_loop.md" | head -60
    timeout 240 python3 -m pytest -q tests/test_step_replays.py > "$OUT/pytest.log" 2>&1
    echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -5 "$OUT/pytest.log" ;;
esac
