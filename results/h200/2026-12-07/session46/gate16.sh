# Session 46 (~5.5 min on an H100 or H200; carry [".whl", "base_gate"], base_gate/ = 45be39d, the odd planes by fma
# at BM >= 32 only): the odd planes also on BM 16 tiles of >= 128 rows a warp group (`int4_kernel.odd_fma`).
# 1. the fp16 W4A16 stacks at M = 1 / 4 / 16, this checkout against 45be39d, one process each, in turns;
# 2. the newly converted tiles (the committed table's bucket-4 and -16 entries it switches) against an fp32 matmul of
#    the dequantized weight, fp16, symmetric and with zero points (tune's check);
# 3. the 70B HierSpec loop (its verify of 8 runs bucket 16), this checkout against 45be39d, one process each
#    (NO_LOOP=1: steps 1-2 only, ~2 min).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
BASE=base_gate ROUNDS=1 TIMEOUT_S=75 bash benchmarks/same_run.sh gate python3 -m benchmarks.bench_quant_linear \
  --models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --dtype float16 --ms 1 4 16 --no-dense --budget-s 60
for f in "$OUT"/gate_*1; do python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['M'], round(r['stack_ms'], 3), {k: round(v * 1e3, 2) for k, v in r['per_shape_ms'].items()}) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$f/quant_linear.json" "$(basename $f)"; done
rm -f "$OUT"/gate_*/*.png; (cd "$OUT" && tar czf gate.tgz $(ls -d gate_*) && rm -rf gate_*)
timeout 90 python3 - <<'PY'
import json, torch
from specbench.quantization.int4_kernel import KernelConfig, odd_fma
from specbench.quantization.tune import W4A16
table = json.load(open("specbench/quantization/tables/h200.json"))["entries"]
kernel = W4A16(dtype=torch.float16)
for key, buckets in table.items():
    if key.startswith("w4a8") or not key.endswith(":g128"):
        continue
    n, k = (int(v) for v in key.split(":")[0].split("x"))
    for m in ("4", "16"):
        cfg = KernelConfig(**buckets[m]["config"])
        if cfg.BM == 16 and odd_fma(cfg):
            print("errors", key, m, cfg, max(kernel.errors(cfg, n, k, 128, int(m))))
PY
echo "checks $(( $(date +%s) - t0 )) s"
[ -n "${NO_LOOP:-}" ] && exit 0
BASE=base_gate ROUNDS=1 TIMEOUT_S=170 bash benchmarks/same_run.sh loop python3 -m benchmarks.bench_sd_loop \
  --model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate \
  llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2
for f in "$OUT"/loop_*1; do echo "== $f"; grep -E "^\| (ar|hierspec) " "$f"/bench_sd_loop.md; grep -E "^- hierspec:" "$f".log | cut -c1-200; done
cd "$OUT" && tar czf loop.tgz $(ls -d loop_* 2>/dev/null) && rm -rf loop_*; ls
echo "total $(( $(date +%s) - t0 )) s"
