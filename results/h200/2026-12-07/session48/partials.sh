# Session 48, call 1 (~4 min on an H100; carry [".whl", "base_prev"], base_prev/ = dee5a81): configs tuned for a forward
# that leaves the split-K sum to the consumer (`tune --partials`: 22bfc79 plus 9f6df2f's tune and lookup, without its
# norm row limit; removed again in c9cf541, so this script runs only on such a tree).
# 1. the compiled-vs-plain GPU tests of the quantized forward (W4A16 and W4A8, whole forward and per layer; the
#    int8-activation kernels now leave their partials too);
# 2. `tune --partials` of the 8B and 70B o, gate/up and down entries of buckets 16 and 32 (fp16, around each entry);
# 3. `profile_sd_step` of the 8B W4A16 verify of 31 tokens, the new table / dee5a81, one process each.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
TABLE=specbench/quantization/tables/$GPU.json
[ -f $TABLE ] && cp $TABLE "$OUT/$GPU.json"
timeout ${TEST_S:-150} python3 -m pytest -q tests/test_quant_gpu.py -k compiled_graphed > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -1 "$OUT/pytest.log"
timeout ${TUNE_S:-170} python3 -m specbench.quantization.tune --gpu $GPU --schemes w4a16 --models llama-3-8b \
  llama-3-70b --buckets 16 32 --groups 128 --around-entry --partials --dtype float16 --workers 14 \
  --budget-s $(( ${TUNE_S:-170} - 25 )) --out "$OUT/$GPU.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "partials:|Error|error" "$OUT/tune.log" | cut -c1-230 | head -30
cp "$OUT/$GPU.json" $TABLE
BASE=base_prev ROUNDS=1 TIMEOUT_S=${PROF_S:-110} bash benchmarks/same_run.sh prof python3 -m \
  benchmarks.profile_sd_step --model llama-3-8b-instruct --quant w4a16 --dtype float16 --compile --compile-scope \
  layer --tokens 31 --steps 10
for f in $(ls -d "$OUT"/prof_*1 2>/dev/null); do python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for part in ('verify', 'decode'):
    p = d[part]
    print(sys.argv[2], part, round(p['step_ms'], 4), 'busy', round(p['busy_us'], 1), 'by position',
          [round(v, 2) for v in p.get('by_position_us', [])],
          'top', [(k['kernel'][:40], int(k['calls']), round(k['us'], 1)) for k in p['kernels'][:6]])
" "$f/profile_sd_step.json" "$(basename $f)"; done
cd "$OUT" && tar czf res.tgz $(ls -d prof_* 2>/dev/null) && rm -rf prof_*; ls
echo "total $(( $(date +%s) - t0 )) s"
