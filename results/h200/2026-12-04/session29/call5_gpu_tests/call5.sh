STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
timeout 420 python3 -m pytest -q -rfEs -p no:cacheprovider tests/test_attention.py tests/test_lossless_greedy.py tests/test_tree_on_device.py tests/test_device_loop.py tests/test_eagle_draft.py tests/test_graphs.py tests/test_kv_cache.py tests/test_model.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -25 "$OUT/pytest.log"
