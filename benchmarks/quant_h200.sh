#!/usr/bin/env bash
# One device call: GPU checks of the low-bit kernels, the W4A16 table for the stacked shapes, the 70B linear-stack
# benchmark with every backend, and the 70B HierSpec row with the tuned table. Results under $OUT; each step has
# its own time cap so the call ends inside its budget. Wheels missing on the machine travel in .whl/.
set -uo pipefail
OUT=${OUT:-bench_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
timeout 70 python3 -m pytest -q -p no:cacheprovider -x tests/test_attention.py tests/test_int4_convert.py \
    tests/test_quant_fbgemm.py > "$OUT/pytest.log" 2>&1; echo "pytest rc $?"; tail -3 "$OUT/pytest.log"
timeout 170 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a16 --models llama-3-70b llama-3-8b \
    --shapes qkv gate_up --buckets 1 16 64 --groups 128 -1 --deq 3 --budget-s 150 --out "$OUT/h200.json" \
    > "$OUT/tune.log" 2>&1; echo "tune rc $?"
[ -f "$OUT/h200.json" ] && cp "$OUT/h200.json" specbench/quantization/tables/h200.json
timeout 130 python3 -m benchmarks.bench_quant_linear --out "$OUT/bench" --models llama-3-70b \
    --backends triton torch fbgemm --schemes w4a16 w8a8_int8 w4a8 w8a8_fp8 --ms 1 16 64 --budget-s 110 \
    > "$OUT/bench.log" 2>&1; echo "bench rc $?"
timeout 100 python3 -m specbench -m +experiment=hierspec_70b dataset=synthetic dataset.synthetic_questions=1 \
    dataset.max_new_tokens=128 timing.warmup=1 experiment/method=l3_70b_ar,l3_70b_hierspec output.root="$OUT/runs" \
    > "$OUT/hierspec.log" 2>&1; echo "hierspec rc $?"
tar czf "$OUT/runs.tgz" -C "$OUT" runs bench 2>/dev/null; rm -rf "$OUT/runs" "$OUT/bench"
grep -E "M=|budget" "$OUT/tune.log" | tail -30
tail -40 "$OUT/bench.log"
grep -a "│" "$OUT/hierspec.log" | tail -6
