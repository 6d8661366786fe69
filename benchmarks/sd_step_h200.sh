#!/usr/bin/env bash
# One device call over the speculative step at the Llama-3-8B bf16 shape (issue #16): GPU tests of the SD fast
# paths, the kernel profile of a verify and of EAGLE-2's expansion graph, and the CLI's compiled AR against
# EAGLE-2 (10, 6, 60) at replayed tau 4.53 in one process; the SD loop's host overhead and Eq. (1) from its graphs'
# replays (benchmarks/bench_sd_loop.py) in LOOP_RUNS separate processes at the 8B shape (step loop) and once at the
# 70B W4A16 shape (step loop70b; LOOP70_PDL="1 0" runs it with and without PDL, LOOP70_ARGS adds arguments). STEPS picks the steps (default: pytest profile run); SD_SET adds overrides to the
# CLI run (e.g. engine.compile_scope=layer). Results under $OUT; small wheels travel in .whl/.
#   STEPS="pytest profile run loop loop70b" bash benchmarks/sd_step_h200.sh
set -uo pipefail
OUT=${OUT:-bench_out}
STEPS=${STEPS:-"pytest profile run"}
. benchmarks/device_env.sh
if step pytest; then
  timeout ${PYTEST_TIMEOUT_S:-200} python3 -m pytest -q -rfE -p no:cacheprovider ${PYTEST_FILES:-tests/test_eagle_draft.py} \
      > "$OUT/pytest.log" 2>&1; echo "pytest rc $?"; grep -E "passed|failed|FAILED|ERROR|Error" "$OUT/pytest.log" | tail -12
fi
if step profile; then
  timeout ${PROFILE_TIMEOUT_S:-280} python3 -m benchmarks.profile_sd_step --out "$OUT/profile" --compile --max-seq-len 4096 \
      > "$OUT/profile.log" 2>&1; echo "profile rc $?"
  grep -A14 -E "^(expand|verify):" "$OUT/profile.log"
fi
if step run; then
  timeout ${RUN_TIMEOUT_S:-300} python3 -m specbench model=llama3_8b model.shape_only=true dataset=synthetic \
      dataset.synthetic_questions=2 dataset.max_new_tokens=256 runtime=cuda runtime.dtype=bfloat16 drafter=eagle \
      drafter.head=random drafter.topk=10 drafter.depth=6 drafter.tree_size=60 compare=[] engine.compile=true \
      timing.acceptance=replay timing.replay_tau=4.53 timing.warmup=1 output.root="$OUT/runs" ${SD_SET:-} \
      > "$OUT/run.log" 2>&1; echo "run rc $?"
  grep -a "│" "$OUT/run.log" | tail -6
  tar czf "$OUT/runs.tgz" -C "$OUT" runs && rm -rf "$OUT/runs"
fi
if step loop; then  # each run's folder (its log inside) packed into loop8b.tgz: at most 8 files come back from $OUT
  for run in $(seq ${LOOP_RUNS:-3}); do
    mkdir -p "$OUT/loop8b/run$run"
    timeout ${LOOP_TIMEOUT_S:-240} python3 -m benchmarks.bench_sd_loop --out "$OUT/loop8b/run$run" --compile \
        --compile-scope layer ${LOOP_ARGS:-} > "$OUT/loop8b/run$run/bench_sd_loop.log" 2>&1; echo "loop (8B) run $run rc $?"
    grep -E "^\| (ar|ngram|eagle|hierspec|sp) " "$OUT/loop8b/run$run/bench_sd_loop.md"
  done
  tar czf "$OUT/loop8b.tgz" -C "$OUT" loop8b && rm -rf "$OUT/loop8b"
fi
if step loop70b; then  # once per value of LOOP70_PDL (SPECBENCH_PDL: 1 on, 0 off), into loop70b/ or loop70b_pdl<value>/
  for pdl in ${LOOP70_PDL:-1}; do
    name=loop70b; [ -n "${LOOP70_PDL:-}" ] && name=loop70b_pdl$pdl
    SPECBENCH_PDL=$pdl timeout ${LOOP70_TIMEOUT_S:-400} python3 -m benchmarks.bench_sd_loop --out "$OUT/$name" \
        --model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer \
        --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 ${LOOP70_ARGS:-} > "$OUT/$name.log" 2>&1
    echo "$name rc $?"; grep -E "^\| (ar|ngram|eagle|hierspec|sp) " "$OUT/$name/bench_sd_loop.md"
  done
fi
