STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
timeout 150 python3 -m pytest -q -x tests/test_quant_gpu.py > "$OUT/pytest.log" 2>&1; echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
ROUNDS=1 TIMEOUT_S=200 bash benchmarks/same_run.sh loop python3 -m benchmarks.bench_sd_loop --model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2
for f in "$OUT"/loop_*1; do echo "== $f"; grep -E "^\| (ar|hierspec) |^- (ar|hierspec):" "$f".log | cut -c1-330; done
tar czf "$OUT/res.tgz" -C "$OUT" loop_new1 loop_old1 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
