#!/usr/bin/env bash
# One device call over the low-bit kernels: GPU checks, the committed table re-tuned (W4A16 with the plane-dot
# mode competing against every current entry, then the int8-activation kernels), the 70B linear-stack benchmark
# with every backend, and the 70B HierSpec row with that table. STEPS picks the steps (default: all); each has its
# own time cap so the call ends inside its budget. Results under $OUT; wheels missing on the machine travel in .whl/.
# TUNE_DEQ, TUNE_PATHS (default dot; gemv for the M = 1 CUDA-core path), TUNE_BUCKETS, TUNE_MODELS, TUNE_GROUPS,
# TUNE_BUDGET_S and BENCH_SCHEMES, BENCH_BACKENDS narrow the w4a16 tune and the benchmark (ZERO_POINTS=1: both on
# w4a16 weights with zero points, into the table's :zp entries);
# TUNE_A8_SCHEMES, TUNE_A8_BUCKETS, TUNE_A8_BUDGET_S (and TUNE_MODELS, TUNE_GROUPS) the int8-activation tune (the
# committed table lacks W4A8 per-channel M = 64 for three of the four 70B linears:
# `STEPS="tune_a8 bench" TUNE_A8_SCHEMES=w4a8 TUNE_A8_BUCKETS="64 32" TUNE_GROUPS=-1 TUNE_A8_BUDGET_S=200`);
# step agreement (not in the default STEPS; AGREE_TIMEOUT_S, AGREE_WORKERS) runs benchmarks/kernel_agreement.py;
# BENCH_MODELS, BENCH_MS and BENCH_TIMEOUT_S the benchmark, BENCH_PDL="1 0" runs it with and without PDL; step tables
# benchmarks each kernel table of BENCH_TABLES (w4a16, triton) in its own process, BENCH_ROUNDS rounds in turn; HIERSPEC_METHODS, HIERSPEC_SET (extra overrides, e.g. engine.compile=true) and HIERSPEC_TIMEOUT_S the HierSpec row.
#   STEPS="tune bench hierspec" bash benchmarks/quant_h200.sh
#   STEPS="pytest tune bench" TUNE_DEQ="3 4" TUNE_BUCKETS="64 16 1" TUNE_MODELS=llama-3-70b TUNE_BUDGET_S=280 \
#       BENCH_SCHEMES=w4a16 bash benchmarks/quant_h200.sh
set -uo pipefail
OUT=${OUT:-bench_out}
STEPS=${STEPS:-"pytest tune tune_a8 bench hierspec"}
. benchmarks/device_env.sh
TABLE=specbench/quantization/tables/h200.json
if step pytest; then
  timeout ${PYTEST_TIMEOUT_S:-200} python3 -m pytest -q -p no:cacheprovider tests/test_attention.py tests/test_int4_convert.py \
      tests/test_quant_fbgemm.py tests/test_buckets.py tests/test_quant_gpu.py tests/test_quant_triton_a8_gpu.py tests/test_eagle_draft.py tests/test_graphs.py > "$OUT/pytest.log" 2>&1; echo "pytest rc $?"
  tail -3 "$OUT/pytest.log"
fi
if step agreement; then  # the triton backend against reference: every shipped shape, layout, dtype, M = 1..128
  timeout ${AGREE_TIMEOUT_S:-400} python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" \
      --workers ${AGREE_WORKERS:-14} --budget-s $((${AGREE_TIMEOUT_S:-400} - 20)) > "$OUT/agreement.log" 2>&1
  echo "agreement rc $?"; cat "$OUT/agreement/kernel_agreement.md"
fi
if step tune; then
  budget=${TUNE_BUDGET_S:-75}
  timeout $((budget + 15)) python3 -m specbench.quantization.tune --gpu h200 --schemes w4a16 \
      --models ${TUNE_MODELS:-llama-3-70b llama-3-8b} --buckets ${TUNE_BUCKETS:-1 16 64} --groups ${TUNE_GROUPS:-128 -1} \
      --deq ${TUNE_DEQ:-3} --paths ${TUNE_PATHS:-dot} --budget-s "$budget" --out "$OUT/h200.json" ${ZERO_POINTS:+--zero-points} \
      > "$OUT/tune.log" 2>&1
  echo "tune rc $?"; [ -f "$OUT/h200.json" ] && cp "$OUT/h200.json" "$TABLE"
fi
if step tune_a8; then
  budget=${TUNE_A8_BUDGET_S:-45}
  timeout $((budget + 15)) python3 -m specbench.quantization.tune --gpu h200 --schemes ${TUNE_A8_SCHEMES:-w8a8_int8 w4a8} \
      --models ${TUNE_MODELS:-llama-3-70b} --buckets ${TUNE_A8_BUCKETS:-1 16 64} --groups ${TUNE_GROUPS:-128 -1} \
      --budget-s "$budget" --out "$OUT/h200.json" > "$OUT/tune_a8.log" 2>&1
  echo "tune_a8 rc $?"; [ -f "$OUT/h200.json" ] && cp "$OUT/h200.json" "$TABLE"
fi
if step bench; then  # once per value of BENCH_PDL (SPECBENCH_PDL: 1 on, 0 off), into bench/ or bench_pdl<value>/
  for pdl in ${BENCH_PDL:-1}; do
    name=bench; [ -n "${BENCH_PDL:-}" ] && name=bench_pdl$pdl
    SPECBENCH_PDL=$pdl timeout ${BENCH_TIMEOUT_S:-75} python3 -m benchmarks.bench_quant_linear --out "$OUT/$name" \
        --models ${BENCH_MODELS:-llama-3-70b} --backends ${BENCH_BACKENDS:-triton torch fbgemm} \
        --schemes ${BENCH_SCHEMES:-w4a16 w8a8_int8 w4a8 w8a8_fp8} --ms ${BENCH_MS:-1 16 64} \
        --budget-s $((${BENCH_TIMEOUT_S:-75} - 15)) ${ZERO_POINTS:+--zero-points} > "$OUT/$name.log" 2>&1
    echo "$name rc $?"
    tail -32 "$OUT/$name.log"
  done
fi
if step tables; then  # each of BENCH_TABLES as the kernel table in its own process, in turn, BENCH_ROUNDS times
  cp "$TABLE" "$OUT/table_before.json"
  for round in $(seq ${BENCH_ROUNDS:-2}); do
    for t in $BENCH_TABLES; do
      name=bench_$(basename "$t" .json)_$round
      cp "$t" "$TABLE"
      timeout ${BENCH_TIMEOUT_S:-75} python3 -m benchmarks.bench_quant_linear --out "$OUT/$name" \
          --models ${BENCH_MODELS:-llama-3-70b} --backends triton --schemes w4a16 --ms ${BENCH_MS:-1 16 64} \
          --budget-s $((${BENCH_TIMEOUT_S:-75} - 15)) > "$OUT/$name.log" 2>&1
      python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['M'], round(r['stack_ms'], 3), {k: round(v * 1e3, 1) for k, v in r['per_shape_ms'].items()}) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$OUT/$name/quant_linear.json" "$name"
    done
  done
  cp "$OUT/table_before.json" "$TABLE"
fi
if step hierspec; then
  timeout ${HIERSPEC_TIMEOUT_S:-110} python3 -m specbench -m +experiment=hierspec_70b dataset=synthetic \
      dataset.synthetic_questions=1 dataset.max_new_tokens=128 timing.warmup=1 \
      experiment/method=${HIERSPEC_METHODS:-l3_70b_ar,l3_70b_hierspec} output.root="$OUT/runs" ${HIERSPEC_SET:-} \
      > "$OUT/hierspec.log" 2>&1; echo "hierspec rc $?"
fi
tar czf "$OUT/runs.tgz" -C "$OUT" $(cd "$OUT" && ls -d runs bench* 2>/dev/null | grep -v '\.log$'); rm -rf "$OUT/runs" "$OUT"/bench "$OUT"/bench_*/
grep -hE "M=[0-9]+:|budget" "$OUT"/tune*.log 2>/dev/null | tail -40
grep -a "│" "$OUT/hierspec.log" 2>/dev/null | tail -6
