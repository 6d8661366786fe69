STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
t0=$(date +%s)
timeout 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_quant_gpu.py tests/test_quant_triton_a8_gpu.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
A="--shapes 6144x4096 4096x4096 28672x4096 4096x14336 10240x8192 8192x8192 57344x8192 8192x28672 --ms 1 16 32 64 --no-floor"
for r in new old; do
  dir=.; [ $r = old ] && dir=base
  (cd $dir && PYTHONPATH=/tmp/site timeout 120 python3 -m benchmarks.profile_int4 $A --out "$OUT/p_$r" > "$OUT/p_$r.log" 2>&1)
  echo "profile $r rc $? $(( $(date +%s) - t0 )) s"
done
python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
runs = {r: json.load(open(f"{out}/p_{r}/profile_int4.json")) for r in ("new", "old") if os.path.exists(f"{out}/p_{r}/profile_int4.json")}
keys = [(x["shape"], x["M"]) for x in runs["new"] if x["kernel"] == "w4a16"]
print("shape M split BM BN warps | " + " ".join(runs))
for key in keys:
    vals = []
    for r, rows in runs.items():
        v = [x for x in rows if x["kernel"] == "w4a16" and (x["shape"], x["M"]) == key]
        vals.append(f"{v[0]['ms'] * 1e3:7.2f}" if v else "   -   ")
    c = [x for x in runs["new"] if (x.get("shape"), x.get("M")) == key][0]["config"]
    print(key[0], key[1], c["split"], c["BM"], c["BN"], c["warps"], "|", " ".join(vals))
PY
B="--models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --ms 1 8 16 32 64 --no-dense --dtype float16 --budget-s 100"
for r in new old v32 v128 new2 old2; do
  dir=.; v=64; case $r in old*) dir=base;; v32) v=32;; v128) v=128;; esac
  (cd $dir && SPECBENCH_SPLITK_SUM_VALUES=$v PYTHONPATH=/tmp/site timeout 110 python3 -m benchmarks.bench_quant_linear --out "$OUT/s_$r" $B > "$OUT/s_$r.log" 2>&1)
  echo "stack $r rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=" "$OUT/s_$r.log" | sed 's/^.*llama/llama/' | tr '\n' ';'; echo
done
C="--models llama-3-70b --backends triton --schemes w4a8 w8a8_int8 --ms 1 16 64 --no-dense --budget-s 100"
for r in new old; do
  dir=.; [ $r = old ] && dir=base
  (cd $dir && PYTHONPATH=/tmp/site timeout 110 python3 -m benchmarks.bench_quant_linear --out "$OUT/a8_$r" $C > "$OUT/a8_$r.log" 2>&1)
  echo "a8 $r rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\| llama" "$OUT/a8_$r.log"
done
tar czf "$OUT/res.tgz" -C "$OUT" p_new p_old s_new s_old s_v32 s_v128 s_new2 s_old2 a8_new a8_old 2>/dev/null
