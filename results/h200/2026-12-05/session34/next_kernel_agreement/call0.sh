# Session 34 (prepared, no device lent). Issue #15's acceptance on the GPU: the triton backend against the fp32
# reference for every shipped linear shape x layout x dtype x M = 1..128 (benchmarks/kernel_agreement.py), which is
# also the widest GPU check of session 33's W4A16 fix. Resumable: if it runs out, run it again (a fresh $OUT starts
# over, so copy the first call's kernel_agreement.json into $OUT/agreement/ first). Carry [".whl"].
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
STEPS=agreement AGREE_TIMEOUT_S=560 AGREE_WORKERS=14 bash benchmarks/quant_h200.sh
echo "total $(( $(date +%s) - t0 )) s"
