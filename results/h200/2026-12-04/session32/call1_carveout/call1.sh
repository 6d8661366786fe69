STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
P=results/h200/2026-12-04/session31/next_glu_carveout_probe
(cd probe && patch -p1 -s < $P/silu_mul_fused_rebased.patch && PYTHONPATH=$PWD timeout 120 python3 $P/probe_glu_carveout.py $OUT/glu_carveout.json 2>&1 | grep -v Warn | tail -6)
echo "probe $(( $(date +%s) - t0 )) s"
ROUNDS=2 TIMEOUT_S=100 bash benchmarks/same_run.sh stack python3 -m benchmarks.bench_quant_linear --models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --ms 1 16 32 64 --no-dense --dtype float16 --budget-s 40
for f in "$OUT"/stack_*[12]; do echo "== $f"; grep -E "^\| llama" "$f"/*.md | cut -d"|" -f2,3,4,7-12; done
tar czf "$OUT/res.tgz" -C "$OUT" stack_new1 stack_new2 stack_old1 stack_old2 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
