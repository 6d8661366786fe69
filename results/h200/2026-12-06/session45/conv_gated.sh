# Session 45 (~2.5 min; carry [".whl", "base_head"], base_head/ = d3a5888): the fp16 odd-plane conversion gated to
# BM >= 32 (conv_call.sh measured it on every tile: faster at M = 32-64, slower on some BM 16 tiles): the conversion's
# GPU tests, then the W4A16 stacks in fp16, new against d3a5888, two rounds in turns, one process each.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 python3 -m pytest -q tests/test_int4_convert.py > "$OUT/pytest.log" 2>&1; echo "pytest rc $?"
tail -1 "$OUT/pytest.log"
BASE=base_head ROUNDS=${ROUNDS:-2} TIMEOUT_S=75 bash benchmarks/same_run.sh gated python3 -m benchmarks.bench_quant_linear \
  --models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --dtype float16 --ms 1 16 32 64 --no-dense \
  --budget-s 60
for f in "$OUT"/gated_*; do [ -d "$f" ] && python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3), {k: round(v * 1e3, 2) for k, v in r['per_shape_ms'].items()}) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$f/quant_linear.json" "$(basename $f)"; done
rm -f "$OUT"/gated_*/*.png; tar czf "$OUT/gated.tgz" -C "$OUT" $(cd "$OUT" && ls -d gated_*) 2>/dev/null && rm -rf "$OUT"/gated_*
echo "total $(( $(date +%s) - t0 )) s"
