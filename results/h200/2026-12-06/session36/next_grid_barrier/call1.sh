# Prepared in session 36 (~3 min, H100 or H200): the weight stream of the 8B and 70B stacks with one launch per linear
# against one launch per layer or per stack with grid barriers (barrier_probe.py). No wheels needed.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout ${PROBE_S:-200} python3 results/h200/2026-12-06/session36/next_grid_barrier/barrier_probe.py "$OUT/barrier.json" \
  --budget-s $(( ${PROBE_S:-200} - 40 )) > "$OUT/barrier.log" 2>&1; echo "probe rc $? $(( $(date +%s) - t0 )) s"
python3 - "$OUT/barrier.log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        print(line.rstrip()[:300]); continue
    r = json.loads(line)
    cells = [f"{k} {v['ms']} ms {v['TBps']} TB/s{'' if v['same'] else ' WRONG'}" for k, v in r.items() if isinstance(v, dict)]
    print(r["model"], r["programs"], "copy", r["copy_TBps"], "torch", r["torch_agrees"], "|", "; ".join(cells))
PY
echo "total $(( $(date +%s) - t0 )) s"
