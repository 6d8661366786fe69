# Prepared in session 36 (~8 min, an H200: the tune refuses other GPUs). The W4A16 entries of buckets 16 and 4 (M = 5-16,
# 2-4; the 70B verify of 8 runs bucket 16) re-tuned around their entries with the fixed kernel, as buckets 1, 32 and
# 64 were in session 36; the 70B down projection's bucket-16 entry is kept (session 25 chose it inside the verify
# forward, where the tune's pick ran slower). Then the 70B HierSpec loop with the new table against the committed
# one, and the W4A16 agreement with it. Make base/ first:
#   mkdir base && git archive HEAD specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets/tiny/*
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
TABLE=specbench/quantization/tables/h200.json
cp $TABLE "$OUT/h200.json"
timeout 200 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a16 --models llama-3-70b llama-3-8b \
  --buckets 16 4 --groups 128 -1 --around-entry --budget-s 170 --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=(16|4):" "$OUT/tune.log" | cut -c1-160
python3 - "$TABLE" "$OUT/h200.json" <<'PY'
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:])
new["entries"]["8192x28672:g128"]["16"] = old["entries"]["8192x28672:g128"]["16"]
new["command"] += "; the 8192x28672:g128 bucket-16 entry kept from the table before (session 25's pick in the forward)"
json.dump(new, open(sys.argv[2], "w"), indent=1)
PY
cp "$OUT/h200.json" $TABLE
ROUNDS=1 TIMEOUT_S=200 bash benchmarks/same_run.sh loop python3 -m benchmarks.bench_sd_loop --model llama-3-70b-instruct \
  --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 \
  --eagle-tau 3.0 --methods ar,hierspec --repeats 2
for f in "$OUT"/loop_*1; do echo "== $f"; grep -E "tok/s, tau|^- (ar|hierspec):" "$f".log | cut -c1-300; done
timeout 120 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a16 --workers 8 --budget-s 100 \
  > "$OUT/agreement.log" 2>&1; echo "agreement rc $?"; tail -11 "$OUT/agreement/kernel_agreement.md"
tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d loop_*1 agreement) 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
