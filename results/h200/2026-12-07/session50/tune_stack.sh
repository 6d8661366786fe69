# Session 50's tune-and-compare call (~2.5-5 min; carry [".whl"]): the stacks of SCHEMES (default w4a16) for the 70B
# and 8B at M = 1, 16, 32, 64 with the committed tables, a tune of this GPU's table (h100 or h200) with --out a copy,
# the stacks with the tuned table in place, then with the committed table again (A-B-A on one machine). Env: GROUP_SIZES
# (the tune's, default 128; -1 per-channel), BUCKETS (default "1 64 16 32"), AROUND (default --around-entry; empty:
# every candidate), BUDGET_S (the tune's, default 300), ONLY (h200 or h100: exit at once on another GPU), LOOP (1:
# then the 70B HierSpec loop, the tuned table in this checkout against a copy with the committed one, one process
# each through benchmarks/same_run.sh; ~4 min more, LOOP_S a side), MODELS (default "llama-3-70b llama-3-8b";
# session 51), RESUME (a table an earlier call's tune left, brought back into the checkout: the tune goes on from it
# with --resume, same options; session 54).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
name=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$name"
case $name in *H200*) gpu=h200 ;; *H100*) gpu=h100 ;; *) echo "no table for $name"; exit 1 ;; esac
[ -n "${ONLY:-}" ] && [ "$gpu" != "$ONLY" ] && { echo "ONLY=$ONLY: nothing to do on $gpu"; exit 0; }
table=specbench/quantization/tables/$gpu.json
t0=$(date +%s)
stack() {
  timeout 100 python3 -m benchmarks.bench_quant_linear --models ${MODELS:-llama-3-70b llama-3-8b} --backends triton \
    --schemes ${SCHEMES:-w4a16} --dtype float16 --ms 1 16 32 64 --no-dense --budget-s 80 --out "$OUT/$1" \
    > "$OUT/$1.log" 2>&1
  echo "$1 rc $? $(( $(date +%s) - t0 )) s"; rm -f "$OUT/$1"/*.png
  python3 -c "import json, sys; [print(r['model'], r['scheme'], r['group_size'], r['M'], round(r['stack_ms'], 3), {k: round(v * 1e3, 1) for k, v in r['per_shape_ms'].items()}, r['autotune']) for r in json.load(open(sys.argv[1]))['rows']]" "$OUT/$1/quant_linear.json"
}
cp "$table" /tmp/committed.json
stack stack_committed
[ -n "${RESUME:-}" ] && cp "$RESUME" "$OUT/$gpu.json"
timeout $(( ${BUDGET_S:-300} + 40 )) python3 -m specbench.quantization.tune --gpu $gpu --schemes ${SCHEMES:-w4a16} \
  --models ${MODELS:-llama-3-70b llama-3-8b} --buckets ${BUCKETS:-1 64 16 32} --groups ${GROUP_SIZES:-128} \
  ${AROUND---around-entry} ${RESUME:+--resume} \
  --budget-s ${BUDGET_S:-300} --workers 14 --out "$OUT/$gpu.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\[" "$OUT/tune.log" | cut -c1-160
cp "$OUT/$gpu.json" "$table"
stack stack_tuned
cp /tmp/committed.json "$table"
stack stack_committed2
if [ -n "${LOOP:-}" ]; then
  rm -rf /tmp/base_committed && mkdir /tmp/base_committed && cp -r specbench benchmarks tools /tmp/base_committed/
  cp "$OUT/$gpu.json" "$table"
  BASE=/tmp/base_committed ROUNDS=1 TIMEOUT_S=${LOOP_S:-150} bash benchmarks/same_run.sh loop python3 -m \
    benchmarks.bench_sd_loop --model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile \
    --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec \
    --repeats 2
  for f in "$OUT"/loop_*1; do echo "== $f"; grep -E "^\| (ar|hierspec) " "$f"/bench_sd_loop.md; done
  (cd "$OUT" && tar czf loop.tgz loop_* && rm -rf loop_*)
fi
echo "total $(( $(date +%s) - t0 )) s"
