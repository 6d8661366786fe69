# Session 53's queued call (carry [".whl"]), asked for as nvidia-h200. On an H200: session 52's call3.sh (W4A16 tune
# of buckets 1 and 16, A-B-A stacks, the 70B HierSpec loop tuned vs committed; BUDGET_S=150, ~8 min). On an H100:
# the fixed cost of a W4A16 launch at the 8B and 70B shapes, M = 1 and 32 (bench_tile_reads' one-copy and empty-grid
# columns, ~2 min): is the 8B stack's ~5.5 µs a kernel above its streaming time launch cost or the kernel's own?
case $(nvidia-smi --query-gpu=name --format=csv,noheader) in
  *H200*) BUDGET_S=${BUDGET_S:-150} bash results/h200/2026-12-07/session52/call3.sh ;;
  *) MODELS="llama-3-8b llama-3-70b" SCHEMES_GROUPS=w4a16:128 MS="1 32" READS_S=200 \
       bash results/h200/2026-12-06/session42/tile_reads.sh ;;
esac
