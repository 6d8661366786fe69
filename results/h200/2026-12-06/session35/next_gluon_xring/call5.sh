# Session 35, fifth call (~2.5 min): the Gluon W4A16 prototype with x through the cp.async ring against its
# thread-loaded x and the committed kernel (xring_probe.py). Carry [".whl"] with ptxas-13.5.xz.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.whl/ptxas-13.5.xz'), open('/tmp/ptxas-13.5', 'wb'))" && chmod +x /tmp/ptxas-13.5
export TRITON_PTXAS_PATH=/tmp/ptxas-13.5
timeout ${PROBE_S:-130} python3 results/h200/2026-12-06/session35/next_gluon_xring/xring_probe.py "$OUT/xring.json" \
  --budget-s $(( ${PROBE_S:-130} - 30 )) > "$OUT/xring.log" 2>&1; echo "probe rc $? $(( $(date +%s) - t0 )) s"
python3 - "$OUT/xring.log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        print(line.rstrip()[:300]); continue
    r = json.loads(line)
    cells = [f"{k} {v['us']}us {v['rel_err']:.1e}" if "us" in v else f"{k} {v['error'][:120]}"
             for k, v in r.items() if isinstance(v, dict)]
    print(r["shape"], r["M"], "committed", r["committed_us"], "|", "; ".join(cells))
PY
echo "total $(( $(date +%s) - t0 )) s"
