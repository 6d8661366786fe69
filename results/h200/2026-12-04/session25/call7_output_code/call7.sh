STEPS=none; . benchmarks/device_env.sh 2>/dev/null
TORCH_LOGS="output_code" timeout 250 python3 -m benchmarks.profile_sd_step --out "$OUT/prof70" --model llama-3-70b-instruct --quant w4a16 \
   --dtype float16 --compile --compile-scope layer --tokens 8 --steps 3 > "$OUT/code.log" 2>&1
echo "rc $?"; grep -c "w4a16_mm" "$OUT/code.log"; grep -n "Output code written to\|def call(args)" "$OUT/code.log" | head -20
python3 - "$OUT/code.log" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
calls = [m.start() for m in re.finditer(r"def call\(", text)]
print(len(calls), "graphs")
for c in calls:
    body = text[c:c + 6000]
    end = body.find("\ndef ", 10)
    body = body[:end if end > 0 else 6000]
    if "w4a16_mm" in body and "28672" in body:
        print(body[:5000]); break
PY
