STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
P=results/h200/2026-12-04/session31/next_glu_carveout_probe
(cd probe && patch -p1 -s < silu_specbench.patch && echo applied && PYTHONPATH=$PWD timeout 150 python3 $P/probe_glu_carveout.py $OUT/glu_carveout.json 2>&1 | grep -v Warn | tail -6)
echo "probe $(( $(date +%s) - t0 )) s"
