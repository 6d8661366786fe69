# Not run in session 32 (no device lent). The Gluon prototype against the committed W4A16 kernel, same process.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
D=results/h200/2026-12-04/session32/next_gluon_w4a16
timeout 60 python3 $D/gluon_w4a16.py --compile-only 2>&1 | grep -v Warn
timeout 400 python3 $D/gluon_w4a16.py $OUT/gluon.json > $OUT/gluon.log 2>&1; echo "probe rc $? $(( $(date +%s) - t0 )) s"
grep '^{' $OUT/gluon.log | cut -c1-600; tail -5 $OUT/gluon.log
