# Session 35, fourth call (H100, ~7 min): what session 33's register-hazard fix costs, the 70B and 8B W4A16 stacks against
# f5d6121 (base/), whose H100 gets the H200 table by a copy made before the call (base/.../tables/h100.json = h200.json;
# f5d6121 predates SIBLINGS, so on an H100 it ran the generic heuristic in call 2); then session 33's Gluon W4A16
# prototype (call5.sh) cut to the time left. Carry [".whl"] with ptxas-13.5.xz.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
ROUNDS=1 TIMEOUT_S=60 bash benchmarks/same_run.sh stack python3 -m benchmarks.bench_quant_linear \
  --models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --ms 1 16 32 64 --no-dense --dtype float16 --budget-s 45
for f in "$OUT"/stack_*1; do echo "== $f"; grep -E "^\| llama" "$f"/*.md | cut -d"|" -f2,3,4,6-12; done
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.whl/ptxas-13.5.xz'), open('/tmp/ptxas-13.5', 'wb'))" && chmod +x /tmp/ptxas-13.5 && /tmp/ptxas-13.5 --version | tail -1
export TRITON_PTXAS_PATH=/tmp/ptxas-13.5
D=results/h200/2026-12-04/session33/next_gluon_w4a16_movs
timeout 260 python3 $D/gluon_w4a16.py "$OUT/gluon.json" > "$OUT/gluon.log" 2>&1; echo "probe rc $? $(( $(date +%s) - t0 )) s"
grep '^{' "$OUT/gluon.log" | cut -c1-900; tail -4 "$OUT/gluon.log" | cut -c1-400
tar czf "$OUT/all.tgz" -C "$OUT" --exclude all.tgz . 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
