STEPS=none; . benchmarks/device_env.sh 2>/dev/null
cp specbench/quantization/tables/h200.json /tmp/h200.orig.json
for v in "256 8 4" "128 8 3" "256 16 4" "128 4 3"; do
  set -- $v
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
bn, split, stages = map(int, sys.argv[1:])
t = json.load(open("/tmp/h200.orig.json"))
e = t["entries"]["8192x28672:g128"]["16"]["config"]
e.update(BN=bn, split=split, stages=stages)
json.dump(t, open("specbench/quantization/tables/h200.json", "w"))
PY
  timeout 150 python3 -m benchmarks.profile_sd_step --out "$OUT/p_$1_$2" --model llama-3-70b-instruct --quant w4a16 \
     --dtype float16 --compile --compile-scope layer --tokens 8 --steps 3 > "$OUT/p_$1_$2.log" 2>&1
  echo "down BN $1 split $2 stages $3: rc $?"; grep -E "^(verify|decode):|linears" "$OUT/p_$1_$2.log"
done
