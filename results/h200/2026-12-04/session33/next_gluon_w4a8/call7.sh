# Session 33 (prepared). The Gluon W4A8 per-channel prototype (int4 weights, int8 activations, the nibble moves and the
# next step's loads overlapping the int8 wgmmas) against the committed kernel, 70B shapes at M = 1, 16, 64, with
# ptxas 13.5 (~6 min; carry [".whl"] with ptxas-13.5.xz). Session 35: RING=1 takes x through the cp.async ring
# (session 35's W4A16 x-ring probe says whether to).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.whl/ptxas-13.5.xz'), open('/tmp/ptxas-13.5', 'wb'))" && chmod +x /tmp/ptxas-13.5
export TRITON_PTXAS_PATH=/tmp/ptxas-13.5
D=results/h200/2026-12-04/session33/next_gluon_w4a8
timeout 60 python3 $D/gluon_w4a8.py --compile-only 2>&1 | grep -v Warn
timeout 480 python3 $D/gluon_w4a8.py "$OUT/gluon_w4a8.json" ${RING:+--ring} > "$OUT/gluon_w4a8.log" 2>&1; echo "probe rc $? $(( $(date +%s) - t0 )) s"
grep '^{' "$OUT/gluon_w4a8.log" | cut -c1-700; tail -5 "$OUT/gluon_w4a8.log"
