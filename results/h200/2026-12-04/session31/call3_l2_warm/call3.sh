STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
timeout 120 python3 probe_warm.py $OUT/probe_warm.json 2>&1 | grep -v Warn | tail -10
