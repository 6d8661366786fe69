# Session 46 (~8 min, an H200; carry [".whl", "base_head"], base_head/ = d3a5888, before the fp16 odd-plane
# conversion): 1. the W4A16 stacks in fp16, this checkout against d3a5888 on the committed table (conv_gated.sh, one
# round); 2. the W4A16 entries of buckets 32 / 64 re-tuned in fp16 around their entries (`tune --dtype float16`: the
# entries were timed in bf16, without the conversion); 3. the fp16 stacks on that table; 4. the 70B HierSpec loop,
# this checkout with the new table against d3a5888 with the committed one, one process each. On an H100 the tune
# writes the H100's own table (tables/h100.json; session 47), the H200's entries among its candidates.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
[ -n "${SKIP_GATED:-}" ] || ROUNDS=1 bash results/h200/2026-12-06/session45/conv_gated.sh  # SKIP_GATED=1: from step 2
GPU=h100; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && GPU=h200
TABLE=specbench/quantization/tables/$GPU.json
cp $TABLE "$OUT/$GPU.json"
timeout ${TUNE_S:-130} python3 -m specbench.quantization.tune --gpu $GPU --schemes w4a16 --models llama-3-8b \
  llama-3-70b --buckets 32 64 --groups 128 --around-entry --dtype float16 --workers 14 --budget-s $(( ${TUNE_S:-130} - 20 )) \
  --out "$OUT/$GPU.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=(32|64):" "$OUT/tune.log" | cut -c1-170
cp "$OUT/$GPU.json" $TABLE
timeout 75 python3 -m benchmarks.bench_quant_linear --out "$OUT/tuned" --models llama-3-70b llama-3-8b --backends \
  triton --schemes w4a16 --dtype float16 --ms 1 32 64 --no-dense --budget-s 60 > "$OUT/tuned.log" 2>&1
python3 -c "import json, sys; [print('tuned', r['model'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$OUT/tuned/quant_linear.json"
echo "stacks $(( $(date +%s) - t0 )) s"
BASE=base_head ROUNDS=1 TIMEOUT_S=170 bash benchmarks/same_run.sh loop python3 -m benchmarks.bench_sd_loop \
  --model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate \
  llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2
for f in "$OUT"/loop_*1; do echo "== $f"; grep -E "tok/s, tau|^- (ar|hierspec):" "$f".log | cut -c1-330; done
rm -f "$OUT"/tuned/*.png; cd "$OUT" && keep="loop_*1 tuned gated.tgz pytest.log gated_*.log loop_*.log tuned.log"
tar czf res.tgz $(ls -d $keep 2>/dev/null) && rm -rf $(ls -d $keep 2>/dev/null); cd - >/dev/null; ls "$OUT"
echo "total $(( $(date +%s) - t0 )) s"
