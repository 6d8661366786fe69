# Session 51's next call (carry [".whl"]; base/ = `git archive ad3f3a9`, before the nearest-entry fallback), on
# whichever card comes. H200: session 40's queued W4A8 g128 tune with the scaled one-dot tiles, stacks against base/,
# W4A8 agreement (~9 min). H100: (1) Qwen3-8B's W4A16 and W4A8 stacks, this checkout (its untuned g128 weights run
# Llama-3-8B's entries) against base/ (the heuristic), two rounds in turns; (2) with W8A8=1, the H100's own W8A8 int8 entries
# (Quasar's scheme) for the 8B shapes, every candidate at M buckets 1, 4, 16, 64, with A-B-A stacks (~8 min in all).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
name=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$name"
case $name in
  *H200*) TUNE_S=240 bash results/h200/2026-12-06/session40/scaled_h200.sh ;;
  *H100*)
    ROUNDS=${ROUNDS:-2} TIMEOUT_S=75 bash benchmarks/same_run.sh qwen python3 -m benchmarks.bench_quant_linear --models qwen3-8b \
      --backends triton --schemes w4a16 w4a8 --dtype float16 --ms 1 16 32 64 --no-dense --budget-s 60
    for f in "$OUT"/qwen_*[12]; do python3 -c "import json, sys; [print(sys.argv[2], r['scheme'], r['group_size'], r['M'], round(r['stack_ms'], 3), {k: round(v * 1e3, 1) for k, v in r['per_shape_ms'].items()}, r['autotune']) for r in json.load(open(sys.argv[1]))['rows']]" "$f/quant_linear.json" "$(basename $f)"; done
    rm -f "$OUT"/qwen_*/*.png; (cd "$OUT" && tar czf qwen.tgz qwen_* && rm -rf qwen_*)
    [ -n "${W8A8:-}" ] && ONLY=h100 SCHEMES=w8a8_int8 GROUP_SIZES=-1 AROUND= BUCKETS="1 4 16 64" BUDGET_S=160 \
      MODELS="qwen3-8b llama-3-8b" bash results/h200/2026-12-07/session50/tune_stack.sh ;;
esac
