# Session 52's fourth call (carry [".whl"]), asked for as nvidia-h200: on an H200 call3.sh (with BUDGET_S=150, ~8 min),
# on an H100 the 8-warp experiment (warps8.sh, ~5 min).
case $(nvidia-smi --query-gpu=name --format=csv,noheader) in
  *H200*) BUDGET_S=150 bash results/h200/2026-12-07/session52/call3.sh ;;
  *) TUNE_S=${TUNE_S:-180} bash results/h200/2026-12-07/session52/warps8.sh ;;
esac
