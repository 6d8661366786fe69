# Session 52's first call (carry [".whl"]; base/ = `git archive ad3f3a9 ...`, for the H100 branch), on whichever card
# comes. H200: session 50's queued W4A16 tune of buckets 1 and 16 over every candidate, A-B-A stacks, then the 70B
# HierSpec loop with the tuned table against the committed one (~9.5 min). H100: session 51's call 2 with W8A8=1
# (Qwen3-8B's stacks on the nearest tuned entries against the heuristic; the H100's own W8A8 int8 entries).
name=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case $name in
  *H200*) ONLY=h200 LOOP=1 AROUND= BUCKETS="1 16" BUDGET_S=220 bash results/h200/2026-12-07/session50/tune_stack.sh ;;
  *) W8A8=1 bash results/h200/2026-12-07/session51/call2.sh ;;
esac
