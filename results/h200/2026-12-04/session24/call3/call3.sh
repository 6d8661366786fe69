STEPS=none; . benchmarks/device_env.sh; cp specbench/quantization/tables/h200.json /tmp/before.json
STEPS=tune_a8 TUNE_A8_SCHEMES=w4a8 TUNE_A8_BUCKETS=64 TUNE_GROUPS=-1 TUNE_MODELS=llama-3-70b TUNE_A8_BUDGET_S=240 bash benchmarks/quant_h200.sh 2>&1 | grep -v WARN
cp $OUT/h200.json /tmp/tuned.json; T=specbench/quantization/tables/h200.json
run() { cp $2 $T; timeout 120 python3 -m benchmarks.bench_quant_linear --out $OUT/$1 --models llama-3-70b --backends triton --schemes w4a8 w8a8_int8 --ms 1 16 64 --no-dense > $OUT/$1.log 2>&1; echo "== $1 rc $?"; grep -E "^\| llama" $OUT/$1.log | cut -d'|' -f3,6-10; }
run before1 /tmp/before.json; run tuned1 /tmp/tuned.json; run before2 /tmp/before.json; run tuned2 /tmp/tuned.json
tar czf $OUT/benches.tgz -C $OUT before1 tuned1 before2 tuned2; rm -rf $OUT/before1 $OUT/tuned1 $OUT/before2 $OUT/tuned2; cat $OUT/*.log > $OUT/logs.txt; rm $OUT/before*.log $OUT/tuned*.log
