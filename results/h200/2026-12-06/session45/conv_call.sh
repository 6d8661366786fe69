# Session 45 (~6 min; carry [".whl", "base_head"], base_head/ = d3a5888): the fp16 int4 conversion that reads odd
# nibble planes in place (1024 + 16 q under 0x6400, one fma by 1/16 less 64 + z; 2 shifts a word pair, not 6):
# GPU tests of the conversion and the quantized linears, the W4A16 agreement in fp16, then the W4A16 stacks in fp16
# (SpecMQuant's and HierSpec's dtype), new against d3a5888, two rounds in turns, one process each.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 150 python3 -m pytest -q -x tests/test_int4_convert.py tests/test_quant_gpu.py -k "not fbgemm" \
  > "$OUT/pytest.log" 2>&1; echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
timeout 100 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a16 --workers 12 --budget-s 85 \
  > "$OUT/agreement.log" 2>&1; echo "agreement rc $? $(( $(date +%s) - t0 )) s"; tail -4 "$OUT/agreement/kernel_agreement.md"
BASE=base_head ROUNDS=${ROUNDS:-2} TIMEOUT_S=75 bash benchmarks/same_run.sh conv python3 -m benchmarks.bench_quant_linear \
  --models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --dtype float16 --ms 1 16 32 64 --no-dense \
  --budget-s 60
for f in "$OUT"/conv_*; do [ -d "$f" ] && python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$f/quant_linear.json" "$(basename $f)"; done
rm -f "$OUT"/conv_*/*.png; tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d conv_* agreement) 2>/dev/null \
  && rm -rf "$OUT"/conv_* "$OUT"/agreement
echo "total $(( $(date +%s) - t0 )) s"
