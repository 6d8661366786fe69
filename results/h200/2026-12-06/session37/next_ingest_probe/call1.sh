# Prepared in session 37 (~2 min, an H200, or an H100 for the shape of the answer): DRAM + L2 ingest of the SMs with
# the activation re-reads of the M = 64 kernels (ingest_probe.py). No wheels needed.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 150 python3 results/h200/2026-12-06/session37/next_ingest_probe/ingest_probe.py "$OUT/ingest.json" \
  --ratios 0 1 2 4 --budget-s 110 > "$OUT/ingest.log" 2>&1; echo "probe rc $? $(( $(date +%s) - t0 )) s"
cat "$OUT/ingest.log" | cut -c1-300
