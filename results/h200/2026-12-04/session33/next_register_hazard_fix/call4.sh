# Session 33 (prepared). The 70B HierSpec loop, the fixed kernel against f5d6121 (base/ as in call1.sh), one process
# each (~7 min). Run after call3.sh with its table copied into specbench/quantization/tables/ if it was adopted.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
ROUNDS=1 TIMEOUT_S=200 bash benchmarks/same_run.sh loop python3 -m benchmarks.bench_sd_loop --model llama-3-70b-instruct \
  --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 \
  --eagle-tau 3.0 --methods ar,hierspec --repeats 2
for f in "$OUT"/loop_*1; do echo "== $f"; grep -E "tok/s, tau|^- (ar|hierspec):" "$f".log | cut -c1-420; done
tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d loop_*1) 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
