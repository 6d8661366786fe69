# Session 51's next call (carry [".whl"]; base/ = `git archive HEAD`), on whichever card comes. H200: session 40's
# queued W4A8 g128 tune with the scaled one-dot tiles, stacks against base/, W4A8 agreement (~9 min). H100: the H100's
# own W8A8 int8 entries (Quasar's scheme) for the 8B shapes, every candidate at M buckets 1, 4, 16, 64, with A-B-A
# stacks (~6 min).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
name=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$name"
case $name in
  *H200*) bash results/h200/2026-12-06/session40/scaled_h200.sh ;;
  *H100*) ONLY=h100 SCHEMES=w8a8_int8 GROUP_SIZES=-1 AROUND= BUCKETS="1 4 16 64" BUDGET_S=220 \
            MODELS="qwen3-8b llama-3-8b" bash results/h200/2026-12-07/session50/tune_stack.sh ;;
esac
