# Session 45 (~3 min, an H200; carry [".whl", "base_head"], base_head/ = d3a5888): conv_gated.sh (the fp16 odd-plane
# conversion at BM >= 32, new against d3a5888 in fp16, two rounds), then the W4A16 stacks in bf16 with this checkout
# beside bf16 cuBLAS (the status row's H200 figures predate session 33's register-hazard fix).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
bash results/h200/2026-12-06/session45/conv_gated.sh
t0=$(date +%s)
timeout 90 python3 -m benchmarks.bench_quant_linear --out "$OUT/bf16" --models llama-3-70b llama-3-8b \
  --backends triton --schemes w4a16 --ms 1 16 32 64 --budget-s 75 > "$OUT/bf16.log" 2>&1; echo "bf16 rc $?"
python3 -c "import json, sys; [print(r['model'], r['backend'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows']]" "$OUT/bf16/quant_linear.json"
rm -f "$OUT"/bf16/*.png
echo "bf16 total $(( $(date +%s) - t0 )) s"
