STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
timeout 120 python3 probe_pf.py $OUT/probe_lanes_all.json 2>&1 | grep -v Warn | tail -6; echo "rc $? $(( $(date +%s) - t0 )) s"
SPECBENCH_PF_LANES=1 timeout 120 python3 probe_pf.py $OUT/probe_lanes_1.json 2>&1 | grep -v Warn | tail -6; echo "rc $? $(( $(date +%s) - t0 )) s"
