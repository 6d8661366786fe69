# Session 54's first call (carry [".whl"]), asked for as nvidia-h200. H200: session 52's queued W4A16 tune of buckets 1
# and 16 with A-B-A stacks and the 70B HierSpec loop, tuned table against the committed one (~9.5 min). An H100 ran
# session 53's ncu profile here once (ncu_m1/); it now only names itself and stops.
name=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case $name in
  *H200*) bash results/h200/2026-12-07/session52/call3.sh ;;
  *) echo "$name: no H200, nothing run" ;;
esac
