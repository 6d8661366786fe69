#!/usr/bin/env bash
# One device call that looks inside the W4A16 kernel: GPU tests of the int4 paths, each table config beside a
# streaming read of the same bytes (benchmarks/profile_int4.py), a short tune of the DEQ modes in TUNE_DEQ, ncu's
# speed-of-light, occupancy and stall sections for NCU_SHAPES, and the SASS of SASS_ARGS configs (tools.int4_sass).
# WAVES sweeps the column tiles of WAVE_SHAPES (profile_int4.py --waves).
#   STEPS="pytest floor tune ncu sass" bash benchmarks/int4_profile_h200.sh
#   STEPS=waves WAVE_SHAPES="57344x8192 8192x28672" WAVES="16 448 8" bash benchmarks/int4_profile_h200.sh
set -uo pipefail
OUT=${OUT:-bench_out}
STEPS=${STEPS:-"pytest floor tune ncu sass"}
. benchmarks/device_env.sh
SHAPES=${SHAPES:-"6144x4096 4096x4096 28672x4096 4096x14336 57344x8192"}
if step pytest; then
  timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_int4_convert.py tests/test_quant_gpu.py > "$OUT/pytest.log" 2>&1
  echo "pytest rc $?"; tail -3 "$OUT/pytest.log"
fi
if step floor; then
  timeout ${FLOOR_TIMEOUT_S:-150} python3 -m benchmarks.profile_int4 --shapes $SHAPES --ms ${FLOOR_MS:-1 16 64} \
      --out "$OUT/floor" > "$OUT/floor.log" 2>&1; echo "floor rc $?"
  cut -c1-220 "$OUT/floor.log" | grep '^{' 
fi
if step waves; then  # WAVES="T0 T1 STEP" column tiles of each of WAVE_SHAPES, at WAVE_MS
  timeout ${WAVES_TIMEOUT_S:-120} python3 -m benchmarks.profile_int4 --shapes ${WAVE_SHAPES:-57344x8192} \
      --ms ${WAVE_MS:-1} --waves ${WAVES:-64 448 16} --out "$OUT/waves" > "$OUT/waves.log" 2>&1; echo "waves rc $?"
  python3 -c "import json; [print(r['shape'], r['M'], r['tiles'], r['programs'], round(r['ms'] * 1e3, 2), round(r['stream_ms'] * 1e3, 2)) for r in json.load(open('$OUT/waves/profile_int4.json'))]"
fi
if step tune; then
  budget=${TUNE_BUDGET_S:-150}
  timeout $((budget + 20)) python3 -m specbench.quantization.tune --gpu h200 --schemes w4a16 \
      --models ${TUNE_MODELS:-llama-3-8b} --buckets ${TUNE_BUCKETS:-1 16} --groups 128 --deq ${TUNE_DEQ:-5} \
      --budget-s "$budget" --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
  echo "tune rc $?"; grep -hE "M=[0-9]+:|budget" "$OUT/tune.log" | tail -30
  [ -f "$OUT/h200.json" ] && cp "$OUT/h200.json" specbench/quantization/tables/h200.json
fi
if step ncu; then
  timeout ${NCU_TIMEOUT_S:-150} ncu --kernel-name regex:w4a16 --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
      python3 -m benchmarks.profile_int4 --ncu --shapes ${NCU_SHAPES:-28672x4096 57344x8192} --ms ${NCU_MS:-1 64} \
      > "$OUT/ncu.txt" 2>&1; echo "ncu rc $?"
  grep -E "w4a16_kernel|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|Stall|Warp Cycles Per Issued|No Eligible|Theoretical Occ|Block Limit" "$OUT/ncu.txt" | head -120
fi
if step sass; then
  for a in ${SASS_ARGS:-"--deq 4" "--deq 5"}; do
    python3 -m tools.int4_sass --BM 16 --BN 256 --BK 128 --warps 4 --stages 3 $a --sass "$OUT/sass_${a// /_}.txt" 2>&1 | tail -1
  done
fi
