STEPS=none; . benchmarks/device_env.sh; cp specbench/quantization/tables/h200.json /tmp/before.json
STEPS=tune TUNE_DEQ="5 9" TUNE_BUCKETS="8 24" TUNE_GROUPS=128 TUNE_MODELS=llama-3-70b TUNE_BUDGET_S=250 bash benchmarks/quant_h200.sh
cp $OUT/h200.json /tmp/tuned.json
STEPS=tables BENCH_TABLES="/tmp/before.json /tmp/tuned.json" BENCH_MODELS=llama-3-70b BENCH_MS="1 8 16 24" BENCH_ROUNDS=2 bash benchmarks/quant_h200.sh 2>&1 | grep -v "^\[" | grep bench_
