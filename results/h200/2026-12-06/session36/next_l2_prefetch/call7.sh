# Session 36, call 7 (~2 min): the W4A16 kernel with its weights cold, warm in L2, and prefetched into L2 before an
# idle window (l2_probe.py).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout ${PROBE_S:-200} python3 results/h200/2026-12-06/session36/next_l2_prefetch/l2_probe.py "$OUT/l2.json" \
  --budget-s $(( ${PROBE_S:-200} - 40 )) > "$OUT/l2.log" 2>&1; echo "probe rc $? $(( $(date +%s) - t0 )) s"
python3 - "$OUT/l2.log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        print(line.rstrip()[:300]); continue
    r = json.loads(line)
    print(" ".join(f"{k}={v}" for k, v in r.items()))
PY
echo "total $(( $(date +%s) - t0 )) s"
