# Session 56 (carry [".whl"], asked as nvidia-h200). On an H200: session 54's state of HEAD (the W4A16 and W4A8
# stacks, the 70B HierSpec loop; TOTAL_S=420 skips its W4A8 tune, ~7 min). On an H100 (the answer most calls get),
# with H100=1: the H100's own W4A8 g128 entries at bucket 1, where it still ran the H200's (70B g128 at M = 1 15.08
# ms, 76 % of copy bandwidth, against per-channel's 12.73 on its own entries: session 51), tuned around them, with the
# W4A8 stacks A-B-A (session 50's tune_stack.sh, ~2.5 min; ran once, 00:17 UTC: results/h200/2026-12-07/session56/h100);
# without it, nothing.
name=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$name"
case $name in
  *H200*) TOTAL_S=420 bash results/h200/2026-12-07/session54/h200_state.sh ;;
  *H100*) [ "${H100:-0}" = 1 ] || { echo "no H200: nothing run"; exit 0; }
          ONLY=h100 SCHEMES=w4a8 GROUP_SIZES=128 BUCKETS=1 BUDGET_S=150 \
            bash results/h200/2026-12-07/session50/tune_stack.sh ;;
esac
