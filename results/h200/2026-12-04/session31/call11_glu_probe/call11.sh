STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
timeout 140 python3 probe_glu.py $OUT/glu.json 2>&1 | grep -v Warn | tail -10
