STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
timeout 200 python3 probe_placement.py $OUT/placement.json 2>&1 | grep -v Warn | tail -32
