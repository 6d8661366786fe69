STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
SPECBENCH_PERSISTENT=2 timeout 150 python3 -m pytest -q -x tests/test_quant_gpu.py -k "w4a16 and (reference or chained)" > "$OUT/pytest.log" 2>&1; echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -2 "$OUT/pytest.log"
B="python3 -m benchmarks.bench_quant_linear --models llama-3-8b llama-3-70b --backends triton --schemes w4a16 --ms 1 16 32 64 --no-dense --dtype float16 --budget-s 60"
for v in "0 2" "1 2" "2 2" "4 2" "2 1" "0 2"; do set -- $v
  name=p$1f$2; [ -d "$OUT/$name" ] && name=${name}b
  SPECBENCH_PERSISTENT=$1 SPECBENCH_FLATTEN=$2 timeout 100 $B --out $OUT/$name > "$OUT/$name.log" 2>&1; echo "$name rc $? $(( $(date +%s) - t0 )) s"
  grep -E "M=[0-9]+: stack" "$OUT/$name.log" | sed 's/^/   /'
done
tar czf "$OUT/res.tgz" -C "$OUT" $(cd $OUT && ls -d p*/ ) 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
