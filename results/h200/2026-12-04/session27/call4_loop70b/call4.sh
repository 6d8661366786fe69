STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_tree_on_device.py tests/test_quant_gpu.py > "$OUT/pytest.log" 2>&1; echo "pytest rc $?"; grep -E "passed|failed|FAIL" "$OUT/pytest.log" | tail -5
timeout 120 python3 -m benchmarks.profile_sd_step --out "$OUT/prof70" --model llama-3-70b-instruct --quant w4a16 --dtype float16 \
  --compile --compile-scope layer --tokens 8 --steps 10 > "$OUT/prof70.log" 2>&1; echo "prof70 rc $?"; grep -E "^verify|^decode|per layer" "$OUT/prof70.log" | head
L="--model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2"
timeout 170 python3 -m benchmarks.bench_sd_loop --out "$OUT/loop_new" $L > "$OUT/loop_new.log" 2>&1; echo "loop new rc $?"
grep -E "^\| (ar|hierspec)" "$OUT/loop_new/bench_sd_loop.md"
(cd base && PYTHONPATH=/tmp/site timeout 170 python3 -m benchmarks.bench_sd_loop --out "$OUT/loop_old" $L > "$OUT/loop_old.log" 2>&1); echo "loop old rc $?"
grep -E "^\| (ar|hierspec)" "$OUT/loop_old/bench_sd_loop.md"
grep -E "^- hierspec" "$OUT/loop_new/bench_sd_loop.md" "$OUT/loop_old/bench_sd_loop.md" | cut -c1-400
tar czf "$OUT/loops.tgz" -C "$OUT" loop_new loop_old prof70
