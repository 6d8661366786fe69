STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
cp specbench/quantization/tables/h200.json "$OUT/h200_before.json"
timeout 100 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a16 --models llama-3-8b llama-3-70b \
  --buckets 32 --groups 128 --around-entry --budget-s 80 --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
echo "tune rc $?"; grep -E "M=[0-9]+:|budget|compil" "$OUT/tune.log" | cut -c1-230
B="--models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --ms 1 32 --no-dense --dtype float16 --budget-s 60"
for r in tuned before tuned2 before2; do
  case $r in tuned*) cp "$OUT/h200.json" specbench/quantization/tables/h200.json ;; before*) cp "$OUT/h200_before.json" specbench/quantization/tables/h200.json ;; esac
  timeout 70 python3 -m benchmarks.bench_quant_linear --out "$OUT/s_$r" $B > "$OUT/s_$r.log" 2>&1
  echo "stack $r rc $?"; grep -E "M=" "$OUT/s_$r.log" | head -4 | cut -c1-80
done
cp "$OUT/h200.json" specbench/quantization/tables/h200.json
L="--model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2"
timeout 150 python3 -m benchmarks.bench_sd_loop --out "$OUT/loop" $L > "$OUT/loop.log" 2>&1; echo "loop rc $?"
grep -E "^\| (ar|hierspec)" "$OUT/loop/bench_sd_loop.md"; grep -E "^- hierspec" "$OUT/loop/bench_sd_loop.md" | cut -c1-200
tar czf "$OUT/stacks.tgz" -C "$OUT" s_tuned s_before s_tuned2 s_before2 loop
