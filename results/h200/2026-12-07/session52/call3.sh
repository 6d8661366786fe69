# Session 52's third call (carry [".whl"]), asked for as nvidia-h200. H200: session 50's queued W4A16 tune of buckets
# 1 and 16 over every candidate (BUDGET_S, default 220), A-B-A stacks, then the 70B HierSpec loop with the tuned table
# against the committed one (~9.5 min). H100: the H100's own per-channel W4A8 entries (70B, 8B, Qwen3-8B; every candidate at buckets 1, 16,
# 32, 64) with A-B-A stacks (~5.5 min).
name=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case $name in
  *H200*) ONLY=h200 LOOP=1 AROUND= BUCKETS="1 16" BUDGET_S=${BUDGET_S:-220} bash results/h200/2026-12-07/session50/tune_stack.sh ;;
  *) ONLY=h100 SCHEMES=w4a8 GROUP_SIZES=-1 AROUND= BUCKETS="1 64 16 32" BUDGET_S=200 \
       MODELS="llama-3-70b llama-3-8b qwen3-8b" bash results/h200/2026-12-07/session50/tune_stack.sh ;;
esac
