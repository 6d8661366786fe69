STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
timeout 100 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_quant_gpu.py -k "chain or matches_reference" > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -1 "$OUT/pytest.log"
B="--models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --ms 1 8 16 32 64 --no-dense --dtype float16 --budget-s 100"
for r in old b c old2 b2 c2; do
  dir=.; s=1; case $r in old*) dir=base;; b*) s=0;; esac
  (cd $dir && SPECBENCH_SPLITK_SERIAL1=$s PYTHONPATH=/tmp/site timeout 110 python3 -m benchmarks.bench_quant_linear --out "$OUT/s_$r" $B > "$OUT/s_$r.log" 2>&1)
  echo "stack $r rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=" "$OUT/s_$r.log" | grep stack | sed 's/^.*llama-3-//; s/, warm-up.*$//; s/stack //' | tr '\n' ';'; echo
done
L="--model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2"
for v in new old; do
  dir=.; [ $v = old ] && dir=base
  (cd $dir && PYTHONPATH=/tmp/site timeout 170 python3 -m benchmarks.bench_sd_loop --out "$OUT/loop_$v" $L > "$OUT/loop_$v.log" 2>&1)
  echo "loop $v rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\| (ar|hierspec)" "$OUT/loop_$v/bench_sd_loop.md"
done
grep -E "^- hierspec" "$OUT/loop_new/bench_sd_loop.md" "$OUT/loop_old/bench_sd_loop.md" | cut -c1-420
tar czf "$OUT/res.tgz" -C "$OUT" s_old s_b s_c s_old2 s_b2 s_c2 loop_new loop_old 2>/dev/null
