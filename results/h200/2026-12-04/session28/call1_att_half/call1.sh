STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
timeout 250 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_attention.py tests/test_quant_gpu.py tests/test_model.py \
  tests/test_lossless_greedy.py tests/test_device_loop.py tests/test_tree_on_device.py tests/test_graphs.py \
  -k "gpu or cuda or compiled or GPU or quant" > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -4 "$OUT/pytest.log"
for v in new old; do
  dir=.; [ $v = old ] && dir=base
  (cd $dir && PYTHONPATH=/tmp/site timeout 60 python3 -m benchmarks.bench_attention --out "$OUT/att_$v" > "$OUT/att_$v.log" 2>&1)
  echo "att $v rc $?"; grep '^{' "$OUT/att_$v.log"
done
for v in new old; do
  dir=.; [ $v = old ] && dir=base
  (cd $dir && PYTHONPATH=/tmp/site timeout 100 python3 -m benchmarks.profile_sd_step --out "$OUT/prof8_$v" --model llama-3-8b-instruct --quant w4a16 \
   --dtype float16 --compile --compile-scope layer --tokens 31 --steps 10 > "$OUT/prof8_$v.log" 2>&1)
  echo "prof8 $v rc $? $(( $(date +%s) - t0 )) s"; grep -A8 -E "^(decode|verify):" "$OUT/prof8_$v.log" | cut -c1-100
done
timeout 130 python3 -m benchmarks.profile_sd_step --out "$OUT/prof70_new" --model llama-3-70b-instruct --quant w4a16 \
   --dtype float16 --compile --compile-scope layer --tokens 25 --steps 10 > "$OUT/prof70_new.log" 2>&1
echo "prof70 rc $? $(( $(date +%s) - t0 )) s"; grep -A8 -E "^(decode|verify):" "$OUT/prof70_new.log" | cut -c1-100
tar czf "$OUT/json.tgz" -C "$OUT" att_new att_old prof8_new prof8_old prof70_new
