STEPS=none; . benchmarks/device_env.sh
timeout 200 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a16 --models llama-3-8b --buckets 32 16 --groups 128 --deq 3 --paths dot --budget-s 180 --out $OUT/h200.json > $OUT/tune.log 2>&1; echo "tune rc $?"
grep -E "M=[0-9]+:" $OUT/tune.log | cut -c1-330
