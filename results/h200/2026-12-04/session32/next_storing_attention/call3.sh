STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
timeout 230 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_attention.py tests/test_kv_cache.py tests/test_model.py \
  tests/test_lossless_greedy.py tests/test_device_loop.py tests/test_tree_on_device.py tests/test_graphs.py tests/test_eagle_draft.py \
  -k "gpu or cuda or compiled or GPU" > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -4 "$OUT/pytest.log"
for v in new old; do
  dir=.; [ $v = old ] && dir=base
  (cd $dir && PYTHONPATH=/tmp/site:$PWD timeout 110 python3 -m benchmarks.profile_sd_step --out "$OUT/prof8_$v" --model llama-3-8b-instruct --quant w4a16 \
   --dtype float16 --compile --compile-scope layer --tokens 31 --steps 10 > "$OUT/prof8_$v.log" 2>&1)
  echo "prof8 $v rc $? $(( $(date +%s) - t0 )) s"; grep -A9 -E "^(decode|verify):" "$OUT/prof8_$v.log" | cut -c1-100
done
tar czf "$OUT/json.tgz" -C "$OUT" prof8_new prof8_old 2>/dev/null
timeout 60 python3 -m benchmarks.bench_attention --out "$OUT/att" --ns 1 8 31 > "$OUT/att.log" 2>&1; echo "att rc $?"; grep '^{' "$OUT/att.log" | cut -c1-400
