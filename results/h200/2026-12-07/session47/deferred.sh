# Session 47 (~9 min, an H100 or H200; carry [".whl", "base_main"], base_main/ = 431da79, before the change): split-K
# W4A16 linears whose consumer adds the partial sums (o_proj, gate/up, down inside a compiled forward; Inductor folds
# the sum into the norm / SiLU kernel), against main, where the last program of each tile sums them.
# 1. the compiled-vs-plain GPU test of the W4A16 forward; 2. `profile_sd_step` of the 8B W4A16 verify of 31 tokens and
# decode, new / main, one process each (PROF=0 skips it); 3. the 70B HierSpec loop, new / main (skipped past
# LOOP_BEFORE_S, default 320 s).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 100 python3 -m pytest -q tests/test_quant_gpu.py -k "compiled_graphed and w4a16" > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -1 "$OUT/pytest.log"
[ "${PROF:-1}" = 0 ] || BASE=base_main ROUNDS=1 TIMEOUT_S=110 bash benchmarks/same_run.sh prof python3 -m \
  benchmarks.profile_sd_step --model llama-3-8b-instruct --quant w4a16 --dtype float16 --compile --compile-scope \
  layer --tokens 31 --steps 10
for f in $(ls -d "$OUT"/prof_*1 2>/dev/null); do python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for part in ('verify', 'decode'):
    p = d[part]; w = [k for k in p['kernels'] if k['kernel'] == 'w4a16_kernel'][0]
    print(sys.argv[2], part, round(p['step_ms'], 4), 'busy', round(p['busy_us'], 1), 'w4a16', round(w['us'], 1),
          'by position', [round(v, 2) for v in p.get('by_position_us', [])],
          'top', [(k['kernel'][:40], round(k['us'], 1)) for k in p['kernels'][1:5]])
" "$f/profile_sd_step.json" "$(basename $f)"; done
if [ $(( $(date +%s) - t0 )) -lt ${LOOP_BEFORE_S:-320} ]; then
BASE=base_main ROUNDS=1 TIMEOUT_S=150 bash benchmarks/same_run.sh loop python3 -m benchmarks.bench_sd_loop \
  --model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate \
  llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2
for f in "$OUT"/loop_*1; do echo "== $f"; grep -E "tok/s, tau|^- (ar|hierspec):" "$f".log | cut -c1-330; done
fi
cd "$OUT" && tar czf res.tgz $(ls -d prof_* loop_* 2>/dev/null) && rm -rf prof_* loop_*; ls
echo "total $(( $(date +%s) - t0 )) s"
