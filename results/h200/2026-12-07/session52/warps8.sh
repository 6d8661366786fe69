# Session 52's experiment (carry [".whl"]; ~5 min): W4A16 DEQ 6 and 9 with 8 warps (two warp groups), which
# check_shape has refused since the early-write builds (docs/quantization.md) "until the fixed code has run with 8
# warps on a GPU". With the rule lifted in this copy only: a tune of Llama-3-8B's g128 weights at buckets 32 and 16
# (the 8B verify of 30 in HierSpec, issue #16's open floor) over every DEQ 5/6/9 candidate, 4 and 8 warps, into a
# copy of this GPU's table; which entries took 8 warps; the 8B stack at M = 16/32 with the tuned table against the
# committed one (A-B-A); the W4A16 kernel agreement with the tuned table (the tune itself tables a winner only if it
# agrees with an fp32 matmul). Env: TUNE_S (the tune's budget, default 180), AGREE=0 (no agreement run; ~3.5 min),
# BUCKETS (the tune's, default "32 16"), MS (the stacks', default "1 16 32"), DEQS (default "5 6 9"), WARPS (e.g. 8:
# only those candidates, besides the heuristic's and the entry), STACKS=0 (no stacks; the tune's log compares).
# SHAPES (e.g. "gate_up down").
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
table=specbench/quantization/tables/$gpu.json
cp "$table" /tmp/committed.json
sed -i 's/^WARP_GROUP_LIMITED = (6, 9)/WARP_GROUP_LIMITED = ()/' specbench/quantization/int4_kernel.py
grep -n "^WARP_GROUP_LIMITED" specbench/quantization/int4_kernel.py
timeout $(( ${TUNE_S:-180} + 40 )) python3 -m specbench.quantization.tune --gpu $gpu --schemes w4a16 \
  --models llama-3-8b --buckets ${BUCKETS:-32 16} --groups 128 --deq ${DEQS:-5 6 9} ${WARPS:+--warps $WARPS} ${SHAPES:+--shapes $SHAPES} --paths dot \
  --budget-s ${TUNE_S:-180} --workers 14 --out "$OUT/$gpu.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\[" "$OUT/tune.log" | cut -c1-330
python3 - "$OUT/$gpu.json" /tmp/committed.json <<'PY'
import json, sys
new, old = (json.load(open(p))["entries"] for p in sys.argv[1:])
for key in ("6144x4096:g128", "4096x4096:g128", "28672x4096:g128", "4096x14336:g128"):
    for m in ("16", "32"):
        a, b = new.get(key, {}).get(m), old.get(key, {}).get(m)
        print(key, m, "old", b and round(b["ms"] * 1e3, 1), b and b["config"], "| new", a and round(a["ms"] * 1e3, 1),
              a and a["config"])
PY
stack() {
  timeout 60 python3 -m benchmarks.bench_quant_linear --models llama-3-8b --backends triton --schemes w4a16 \
    --dtype float16 --ms ${MS:-1 16 32} --no-dense --budget-s 45 --out "$OUT/$1" > "$OUT/$1.log" 2>&1
  python3 -c "import json, sys; [print(sys.argv[2], r['M'], round(r['stack_ms'], 3), {k: round(v * 1e3, 1) for k, v in r['per_shape_ms'].items()}) for r in json.load(open(sys.argv[1]))['rows']]" "$OUT/$1/quant_linear.json" $1
  rm -f "$OUT/$1"/*.png
}
[ "${STACKS:-1}" = 0 ] || { stack committed; cp "$OUT/$gpu.json" "$table"; stack tuned; cp /tmp/committed.json "$table"
  stack committed2; }
cp "$OUT/$gpu.json" "$table"
[ "${AGREE:-1}" = 0 ] || timeout 100 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a16 \
  --workers 14 --budget-s 85 > "$OUT/agreement.log" 2>&1 && echo "agreement done" && cut -c1-150 "$OUT/agreement/kernel_agreement.md" | tail -8
cp /tmp/committed.json "$table"
(cd "$OUT" && tar czf stacks.tgz committed* tuned* agreement* 2>/dev/null; rm -rf committed* tuned* agreement*)
echo "total $(( $(date +%s) - t0 )) s"
