STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_quant_gpu.py > "$OUT/pytest.log" 2>&1; echo "pytest rc $?"; tail -3 "$OUT/pytest.log"
A="--shapes 6144x4096 4096x4096 28672x4096 4096x14336 10240x8192 8192x8192 57344x8192 8192x28672 --ms 1 4 16 32 64 --no-floor"
for r in new old new2 old2; do
  case $r in
    new*) (timeout 150 python3 -m benchmarks.profile_int4 $A --out "$OUT/p_$r" > "$OUT/p_$r.log" 2>&1) ;;
    old*) (cd base && PYTHONPATH=/tmp/site timeout 150 python3 -m benchmarks.profile_int4 $A --out "$OUT/p_$r" > "$OUT/p_$r.log" 2>&1) ;;
  esac
  echo "$r rc $?"
done
for r in new old; do
  B="--models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --ms 1 8 16 32 64 --no-dense --dtype float16 --budget-s 150"
  case $r in
    new) (timeout 170 python3 -m benchmarks.bench_quant_linear --out "$OUT/s_$r" $B > "$OUT/s_$r.log" 2>&1) ;;
    old) (cd base && PYTHONPATH=/tmp/site timeout 170 python3 -m benchmarks.bench_quant_linear --out "$OUT/s_$r" $B > "$OUT/s_$r.log" 2>&1) ;;
  esac
  echo "stack $r rc $?"; grep -E "M=|agreement" "$OUT/s_$r.log" | head -20
done
tar czf "$OUT/results.tgz" -C "$OUT" p_new p_old p_new2 p_old2 s_new s_old pytest.log p_new.log s_new.log s_old.log 2>/dev/null
ls "$OUT"
