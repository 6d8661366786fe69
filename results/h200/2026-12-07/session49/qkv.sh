# Session 49 (~9 min, an H100 or H200; carry [".whl", "base"], base/ = b1d27e0, session 48's HEAD): the q/k/v
# projection's split-K partial sums added by the attention kernel as it loads q, k and v (compiled forwards, M > 1),
# against b1d27e0, where the projection's last program of each tile sums them.
# 1. the GPU tests: the attention kernel with partial sums against their sum (bit for bit) and the compiled-vs-plain
#    W4A16 forward; 2. `profile_sd_step` of the 8B W4A16 verify of 31 tokens and decode, new / base, one process each
#    (PROF=0 skips it); 3. the 70B HierSpec loop, new / base (skipped past LOOP_BEFORE_S, default 300 s).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 python3 -m pytest -q tests/test_attention.py -k on_the_gpu > "$OUT/pytest.log" 2>&1
echo "pytest attention rc $? $(( $(date +%s) - t0 )) s"; tail -1 "$OUT/pytest.log"
timeout 120 python3 -m pytest -q tests/test_quant_gpu.py -k "compiled_graphed and w4a16" >> "$OUT/pytest.log" 2>&1
echo "pytest compiled rc $? $(( $(date +%s) - t0 )) s"; tail -1 "$OUT/pytest.log"
[ "${PROF:-1}" = 0 ] || BASE=${BASE:-base} ROUNDS=1 TIMEOUT_S=110 bash benchmarks/same_run.sh prof python3 -m \
  benchmarks.profile_sd_step --model llama-3-8b-instruct --quant w4a16 --dtype float16 --compile --compile-scope \
  layer --tokens 31 --steps 10
for f in $(ls -d "$OUT"/prof_*1 2>/dev/null); do python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for part in ('verify', 'decode'):
    p = d[part]; w = [k for k in p['kernels'] if k['kernel'] == 'w4a16_kernel'][0]
    print(sys.argv[2], part, round(p['step_ms'], 4), 'busy', round(p['busy_us'], 1), 'w4a16', round(w['us'], 1),
          'by position', [round(v, 2) for v in p.get('by_position_us', [])],
          'top', [(k['kernel'][:40], round(k['us'], 1)) for k in p['kernels'][1:6]])
" "$f/profile_sd_step.json" "$(basename $f)"; done
if [ $(( $(date +%s) - t0 )) -lt ${LOOP_BEFORE_S:-300} ]; then
BASE=${BASE:-base} ROUNDS=1 TIMEOUT_S=150 bash benchmarks/same_run.sh loop python3 -m benchmarks.bench_sd_loop \
  --model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate \
  llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2
for f in "$OUT"/loop_*1; do echo "== $f"; grep -E "^\| (ar|hierspec) |^- hierspec:" "$f"/bench_sd_loop.md | cut -c1-330; done
fi
cd "$OUT" && tar czf res.tgz $(ls -d prof_* loop_* 2>/dev/null) && rm -rf prof_* loop_*; ls
echo "total $(( $(date +%s) - t0 )) s"
