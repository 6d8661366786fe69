# Session 51's first call (carry [".whl"]; base/ = `git archive HEAD`, as benchmarks/same_run.sh says), on whichever
# card comes. H200: session 40's queued W4A8 g128 tune with the scaled one-dot tiles (buckets 16-64 over the full
# grid), the W4A8 stacks against base/ and the W4A8 agreement (~9 min). H100: the 70B HierSpec loop once with the
# committed tables (per-graph shares of the bandwidth bound) and the GPU step-replay tests (~4 min).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
name=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$name"
case $name in
  *H200*) bash results/h200/2026-12-06/session40/scaled_h200.sh ;;
  *H100*)
    t0=$(date +%s)
    timeout 300 python3 -m benchmarks.bench_sd_loop --model llama-3-70b-instruct --quant w4a16 --dtype float16 \
      --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 \
      --methods ar,hierspec --repeats 2 --out "$OUT/loop" > "$OUT/loop.log" 2>&1
    echo "loop rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\| " "$OUT/loop/bench_sd_loop.md" | head -60
    timeout 240 python3 -m pytest -q tests/test_step_replays.py > "$OUT/pytest.log" 2>&1
    echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -5 "$OUT/pytest.log" ;;
esac
