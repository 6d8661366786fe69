# Session 33 (prepared). The Gluon W4A16 prototype with a copy of each plane before its wgmma, assembled by ptxas 13.5
# (carried xz-compressed as .whl/ptxas-13.5.xz, from the nvidia-cuda-nvcc 13.5.37 wheel: carry [".whl"]), against the
# committed kernel in one process. It refuses an older ptxas.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.whl/ptxas-13.5.xz'), open('/tmp/ptxas-13.5', 'wb'))" && chmod +x /tmp/ptxas-13.5 && /tmp/ptxas-13.5 --version | tail -1
export TRITON_PTXAS_PATH=/tmp/ptxas-13.5
D=results/h200/2026-12-04/session33/next_gluon_w4a16_movs
timeout 60 python3 $D/gluon_w4a16.py --compile-only 2>&1 | grep -v Warn
timeout 490 python3 $D/gluon_w4a16.py "$OUT/gluon.json" > "$OUT/gluon.log" 2>&1; echo "probe rc $? $(( $(date +%s) - t0 )) s"
grep '^{' "$OUT/gluon.log" | cut -c1-700; tail -5 "$OUT/gluon.log"
