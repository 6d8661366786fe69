# Session 33 (prepared; after call7.sh shows the W4A8 prototype right). With wgmma_path.patch (both Gluon kernels as
# config path "wgmma") and ptxas 13.5: its GPU tests, the w4a8 per-channel entries of the 70B shapes at M = 16 and 64
# tuned against wgmma candidates, then the 70B W4A8 stack on that table (~8 min; carry [".whl"]).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.whl/ptxas-13.5.xz'), open('/tmp/ptxas-13.5', 'wb'))" && chmod +x /tmp/ptxas-13.5
export TRITON_PTXAS_PATH=/tmp/ptxas-13.5
git apply results/h200/2026-12-04/session33/next_gluon_w4a16_movs/wgmma_path.patch && echo "patch applied"
timeout 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_quant_wgmma.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
cp specbench/quantization/tables/h200.json "$OUT/h200.json"
timeout 260 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a8 --models llama-3-70b --buckets 16 64 \
  --groups -1 --paths wgmma --budget-s 230 --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -c '"wgmma"' "$OUT/h200.json"; tail -3 "$OUT/tune.log"
cp "$OUT/h200.json" specbench/quantization/tables/h200.json
timeout 120 python3 -m benchmarks.bench_quant_linear --out "$OUT/stack" --models llama-3-70b --backends triton \
  --schemes w4a8 --ms 1 16 64 --no-dense --budget-s 100 > "$OUT/stack.log" 2>&1
echo "stack rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\| llama" "$OUT"/stack/*.md | cut -d"|" -f2,3,4,7-12
tar czf "$OUT/res.tgz" -C "$OUT" tune.log stack pytest.log 2>/dev/null
