# Session 54's first call (carry [".whl"]), asked for as nvidia-h200. H200: session 52's queued W4A16 tune of buckets 1
# and 16 with A-B-A stacks and the 70B HierSpec loop, tuned table against the committed one (~9.5 min). H100 (its W4A8
# entries landed in session 53): session 53's ncu warp-state profile of the 8B W4A16 kernels at M = 1 and 32 (~2 min).
name=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case $name in
  *H200*) bash results/h200/2026-12-07/session52/call3.sh ;;
  *) bash results/h200/2026-12-07/session53/ncu_m1.sh ;;
esac
