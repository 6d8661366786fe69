STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
timeout 100 python3 probe_glu_carveout.py $OUT/glu_carveout.json 2>&1 | grep -v Warn | tail -6
