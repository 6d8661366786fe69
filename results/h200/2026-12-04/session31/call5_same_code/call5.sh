STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
ROUNDS=3 TIMEOUT_S=60 bash benchmarks/same_run.sh s python3 -m benchmarks.bench_quant_linear --models llama-3-70b --backends triton --schemes w4a16 --ms 1 8 16 --no-dense --dtype float16 --budget-s 40
for f in "$OUT"/s_*.log; do echo "== $f"; grep -E "M=[0-9]+: stack" "$f"; done
python3 - <<'PY'
import json, glob, os
out = os.environ["OUT"]
for f in sorted(glob.glob(out + "/s_*/quant_linear.json")):
    for r in json.load(open(f))["rows"]:
        print(f.split("/")[-2], r["M"], round(r["stack_ms"], 3), {k: round(v * 1e3, 1) for k, v in r["per_shape_ms"].items()})
PY
tar czf "$OUT/res.tgz" -C "$OUT" $(cd $OUT && ls -d s_*/) 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
