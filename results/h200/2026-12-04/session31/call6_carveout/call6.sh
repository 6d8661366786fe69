STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
timeout 200 python3 probe_carveout.py $OUT/carveout.json 2>&1 | grep -v Warn | tail -12
