# Session 33 (prepared; after call5.sh shows the prototype right). wgmma_path.patch puts the Gluon kernel in the code
# as config path "wgmma" (specbench/quantization/wgmma_kernel.py; CPU tests through gluon_interpreter.py). Here, with
# ptxas 13.5: its GPU test, the w4a16 g128 entries at M = 16, 32, 64 tuned against wgmma candidates, then the 70B and
# 8B stacks on that table (~9 min; carry [".whl"] with ptxas-13.5.xz).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.whl/ptxas-13.5.xz'), open('/tmp/ptxas-13.5', 'wb'))" && chmod +x /tmp/ptxas-13.5
export TRITON_PTXAS_PATH=/tmp/ptxas-13.5
git apply results/h200/2026-12-04/session33/next_gluon_w4a16_movs/wgmma_path.patch && echo "patch applied"
timeout 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_quant_wgmma.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
cp specbench/quantization/tables/h200.json "$OUT/h200.json"
timeout 320 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a16 --models llama-3-8b llama-3-70b \
  --buckets 16 32 64 --groups 128 --paths wgmma --budget-s 290 --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -c '"wgmma"' "$OUT/h200.json"; tail -3 "$OUT/tune.log"
cp "$OUT/h200.json" specbench/quantization/tables/h200.json
timeout 120 python3 -m benchmarks.bench_quant_linear --out "$OUT/stack" --models llama-3-70b llama-3-8b --backends triton \
  --schemes w4a16 --ms 1 16 32 64 --no-dense --dtype float16 --budget-s 100 > "$OUT/stack.log" 2>&1
echo "stack rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\| llama" "$OUT"/stack/*.md | cut -d"|" -f2,3,4,7-12
tar czf "$OUT/res.tgz" -C "$OUT" tune.log stack pytest.log 2>/dev/null
