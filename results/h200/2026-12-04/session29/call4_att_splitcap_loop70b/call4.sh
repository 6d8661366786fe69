STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
timeout 60 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_attention.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -1 "$OUT/pytest.log"
timeout 60 python3 -m benchmarks.bench_attention --out "$OUT/att_576_256" --slots 576 --context 256 --merge-rows 1 > "$OUT/att.log" 2>&1
echo "att rc $? $(( $(date +%s) - t0 )) s"; grep '^{' "$OUT/att.log" | sed 's/"sdpa_us.*//'
L="--model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2"
for v in new old; do
  dir=.; [ $v = old ] && dir=base
  (cd $dir && PYTHONPATH=/tmp/site timeout 170 python3 -m benchmarks.bench_sd_loop --out "$OUT/loop_$v" $L > "$OUT/loop_$v.log" 2>&1)
  echo "loop $v rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\| (ar|hierspec)" "$OUT/loop_$v/bench_sd_loop.md"
done
grep -E "^- (ar|hierspec)" "$OUT/loop_new/bench_sd_loop.md" "$OUT/loop_old/bench_sd_loop.md" | cut -c1-400
tar czf "$OUT/res.tgz" -C "$OUT" att_576_256 loop_new loop_old 2>/dev/null
