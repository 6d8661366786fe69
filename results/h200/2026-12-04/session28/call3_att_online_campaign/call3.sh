STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
timeout 100 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_attention.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -1 "$OUT/pytest.log"
for v in new old; do
  dir=.; a="--merge-rows 1 2 4"; [ $v = old ] && dir=base && a=""; [ $v = twoloop ] && dir=base2
  (cd $dir && PYTHONPATH=/tmp/site timeout 60 python3 -m benchmarks.bench_attention --out "$OUT/att_$v" $a > "$OUT/att_$v.log" 2>&1)
  echo "att $v rc $? $(( $(date +%s) - t0 )) s"; grep '^{' "$OUT/att_$v.log" | cut -c1-150
done
mkdir -p "$OUT/c"; OUT=$OUT/c BUDGET_S=${BUDGET:-400} ONLY="hierspec_70b/w4a16/*" ROOT=results/h200/2026-12-04b \
  SET="engine.compile=true engine.compile_scope=layer" bash benchmarks/campaign_h200.sh > "$OUT/campaign.log" 2>&1
echo "campaign rc $? $(( $(date +%s) - t0 )) s"; tail -12 "$OUT/campaign.log" | cut -c1-160
mv "$OUT/c/campaign.tgz" "$OUT/campaign.tgz"; cp "$OUT/c/chunk.log" "$OUT/chunk.log"
tar czf "$OUT/att.tgz" -C "$OUT" att_new att_twoloop att_old
