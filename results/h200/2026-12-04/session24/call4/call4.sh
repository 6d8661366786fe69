STEPS=none; . benchmarks/device_env.sh; cp specbench/quantization/tables/h200.json /tmp/before.json
STEPS=tune TUNE_PATHS=gemv TUNE_BUCKETS=1 TUNE_GROUPS=128 TUNE_MODELS="llama-3-8b llama-3-70b" TUNE_BUDGET_S=220 bash benchmarks/quant_h200.sh 2>&1 | grep -v WARN
cp $OUT/h200.json /tmp/tuned.json
STEPS=tables BENCH_TABLES="/tmp/before.json /tmp/tuned.json" BENCH_MODELS="llama-3-8b llama-3-70b" BENCH_MS="1" BENCH_ROUNDS=2 bash benchmarks/quant_h200.sh 2>&1 | grep -v "^\[" | grep bench_
