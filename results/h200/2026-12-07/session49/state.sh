# Session 49's first call (~7 min; carry [".whl", "base_prev"], base_prev/ = dee5a81, session 47's code): where HEAD
# stands on the card that comes.
# 1. the W4A16 stacks of this checkout in fp16 (the SD loops' dtype), 70B and 8B, M = 1 / 16 / 32 / 64 (issue #15's
#    floors; last timed on the H200 in session 31, in bf16, before sessions 33-47's kernel changes);
# 2. the 70B HierSpec loop, this checkout (the norm consumers' row limit) against dee5a81 (session 47's deferral
#    everywhere), one process each (issue #16). NO_LOOP=1 stops after step 1, STACK=0 skips it.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ "${STACK:-1}" = 0 ] || timeout 120 python3 -m benchmarks.bench_quant_linear --models llama-3-70b llama-3-8b \
  --backends triton --schemes w4a16 --dtype float16 --ms 1 16 32 64 --no-dense --budget-s 100 --out "$OUT/stack" \
  > "$OUT/stack.log" 2>&1
echo "stack rc $? $(( $(date +%s) - t0 )) s"
[ "${STACK:-1}" = 0 ] || python3 -c "import json, sys; [print(r['scheme'], r['group_size'], r['model'], r['M'], round(r['stack_ms'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$OUT/stack/quant_linear.json"
rm -f "$OUT"/stack/*.png
[ -n "${NO_LOOP:-}" ] && exit 0
BASE=${BASE:-base_prev} ROUNDS=1 TIMEOUT_S=${LOOP_S:-170} bash benchmarks/same_run.sh loop python3 -m \
  benchmarks.bench_sd_loop --model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer \
  --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2
for f in "$OUT"/loop_*1; do echo "== $f"; grep -E "^\| (ar|hierspec) " "$f"/bench_sd_loop.md; grep -E "^- hierspec:" "$f".log | cut -c1-300; done
cd "$OUT" && tar czf loop.tgz $(ls -d loop_* 2>/dev/null) && rm -rf loop_*; ls
echo "total $(( $(date +%s) - t0 )) s"
