STEPS=none; . benchmarks/device_env.sh
OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
for v in new old; do
  dir=.; [ $v = old ] && dir=base
  (cd $dir && PYTHONPATH=/tmp/site timeout 170 python3 -m benchmarks.bench_sd_loop --out "$OUT/loop8b_$v" --compile \
        --compile-scope layer --methods ar,eagle > "$OUT/loop8b_$v.log" 2>&1)
  echo "loop8b $v rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\| (ar|eagle) " "$OUT/loop8b_$v/bench_sd_loop.md"
done
