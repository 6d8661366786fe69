STEPS=none; . benchmarks/device_env.sh; cp specbench/quantization/tables/h200.json /tmp/before.json
timeout 260 python3 narrow_tune.py --gpu h200 --schemes w4a16 --models llama-3-8b --buckets 1 32 --groups 128 --budget-s 240 --out $OUT/h200.json > $OUT/tune.log 2>&1; echo "tune rc $?"
grep -E "M=[0-9]+:" $OUT/tune.log | cut -c1-330
cp $OUT/h200.json /tmp/tuned.json
STEPS=tables BENCH_TABLES="/tmp/before.json /tmp/tuned.json" BENCH_MODELS="llama-3-8b" BENCH_MS="1 32" BENCH_ROUNDS=2 bash benchmarks/quant_h200.sh 2>&1 | grep -v "^\[" | grep bench_
