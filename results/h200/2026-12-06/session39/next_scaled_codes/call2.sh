# Prepared in session 39 (~5 min, an H200; on an H100 the tune writes an H100 table from a copy of the H200 one, and
# that copy runs as the H200 table's sibling): scaled_one_dot.patch, the second version of the codes times QQQ's
# integer group scales (A8Config.scaled). Against scaled_codes.patch (call 1, measured as call5_h100: the tune kept
# no scaled entry) a K tile of several groups takes one dot (one wgmma wait a K step, not one a group) and the group
# scales are loaded a K step ahead (they were loaded at the top of the step and consumed before its first wgmma).
# sm_90 builds, instructions a K step (float scaling / scaled): BM 64 x BK 256 349 / 286, BM 64 x BK 512 612 / 494,
# BM 32 x BK 256 264 / 266, BM 64 x BK 128 194 / 193, BM 16 x BK 128 127 / 182. Apply the patch to 91eb93b or later
# and make base/ from that commit first:
#   git apply results/h200/2026-12-06/session39/next_scaled_codes/scaled_one_dot.patch
#   mkdir base && git archive HEAD specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets/tiny/*
# Then the g128 entries of buckets 64/32/16 re-tuned around their entries (each entry's neighbours include it with
# `scaled` on), the int8-activation GPU tests with that table, the stacks against base/. Adopt (on an H200) if the
# g128 stacks at M = 32-64 are faster; for the full effect follow with the full-grid tune of the g128 buckets 32/64.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
TABLE=specbench/quantization/tables/h200.json
cp $TABLE "$OUT/$GPU.json"
timeout 130 python3 -m specbench.quantization.tune --gpu $GPU --schemes w4a8 --models llama-3-70b llama-3-8b \
  --buckets 64 32 16 --groups 128 --around-entry --budget-s 110 --workers 14 --out "$OUT/$GPU.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=(16|32|64):" "$OUT/tune.log" | cut -c1-210
cp "$OUT/$GPU.json" $TABLE
python3 -c "import json; e=json.load(open('$TABLE'))['entries']; print('scaled entries', sorted((k, b) for k, r in e.items() for b, v in r.items() if v['config'].get('scaled')))"
timeout 170 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_quant_triton_a8_gpu.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -4 "$OUT/pytest.log"
ROUNDS=1 TIMEOUT_S=60 bash benchmarks/same_run.sh a8 python3 -m benchmarks.bench_quant_linear --models llama-3-70b \
  llama-3-8b --backends triton --schemes w4a8 --ms 1 16 32 64 --no-dense --budget-s 45
for f in "$OUT"/a8_*1; do python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton' and r['group_size'] != -1]" "$f/quant_linear.json" "$(basename $f)"; done
rm -f "$OUT"/a8_*/*.png; tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d a8_*1) 2>/dev/null && rm -rf "$OUT"/a8_*1
echo "total $(( $(date +%s) - t0 )) s"
