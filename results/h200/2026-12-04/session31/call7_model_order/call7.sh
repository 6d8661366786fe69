STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
B="python3 -m benchmarks.bench_quant_linear --backends triton --schemes w4a16 --no-dense --dtype float16 --budget-s 60"
for r in 1 2; do
for v in "8b70 llama-3-8b llama-3-70b" "70b8 llama-3-70b llama-3-8b" "70 llama-3-70b"; do set -- $v; name=$1_$r; shift
  timeout 100 $B --models "$@" --ms 1 16 --out $OUT/$name > "$OUT/$name.log" 2>&1; echo "$name rc $? $(( $(date +%s) - t0 )) s"
done; done
python3 - <<'PY'
import json, glob, os
out = os.environ["OUT"]
for f in sorted(glob.glob(out + "/*_[12]/quant_linear.json")):
    for r in json.load(open(f))["rows"]:
        if r["model"] == "llama-3-70b":
            print(f.split("/")[-2], r["M"], round(r["stack_ms"], 3), {k: round(v * 1e3, 1) for k, v in r["per_shape_ms"].items()})
PY
tar czf "$OUT/res.tgz" -C "$OUT" $(cd $OUT && ls -d *_[12]/) 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
