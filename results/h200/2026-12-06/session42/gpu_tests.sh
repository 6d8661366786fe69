# Session 42 (an H100 or H200, ~5 min): the suite's GPU tests outside the quantized linears (session 41 ran
# tests/test_quant_gpu.py on an H100): SD steps from the device against the host loop with CUDA graphs, greedy SD
# against greedy AR with graphs, the model against transformers, attention / KV-write / top-k / GEMV kernels, graph
# buckets and step replays, then the W4A8 GPU tests. Carry [".whl"].
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T=tests
timeout ${PYTEST_S:-330} python3 -m pytest -q -rfEs -p no:cacheprovider \
  $T/test_device_loop.py::test_device_steps_equal_host_steps_with_cuda_graphs \
  $T/test_device_loop.py::test_hierspec_device_steps_equal_host_steps_with_cuda_graphs \
  $T/test_device_loop.py::test_draft_model_device_steps_equal_host_steps_with_cuda_graphs \
  $T/test_lossless_greedy.py::test_greedy_sd_equals_greedy_ar_with_cuda_graphs \
  $T/test_model.py::test_gpu_kernels_match_transformers \
  $T/test_tree_on_device.py::test_best_only_in_a_compiled_graph_gives_each_rows_argmax \
  $T/test_step_replays.py::test_an_eagle_step_replays_the_verify_the_first_pass_and_the_expansion_once_each \
  $T/test_buckets.py::test_graphs_are_captured_lazily_per_used_bucket \
  $T/test_buckets.py::test_probe_rows_record_the_exact_bucket_on_a_gpu \
  $T/test_attention.py::test_storing_kernel_equals_the_cache_write_then_the_kernel_on_the_gpu \
  $T/test_attention.py::test_kernel_matches_sdpa_on_the_gpu \
  $T/test_kv_cache.py::test_store_rows_equals_the_indexed_store_on_the_gpu \
  $T/test_int4_convert.py::test_plane_dot_path_on_cuda_matches_reference \
  $T/test_graphs.py::test_a_graph_freed_during_another_capture_leaves_that_capture_whole \
  $T/test_gemv.py::test_model_with_gemv_matches_cublas_at_decode \
  $T/test_eagle_draft.py::test_top_k_kernels_match_torch_on_the_gpu_eager_and_compiled \
  $T/test_quant_triton_a8_gpu.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|FAILED|ERROR|SKIPPED" "$OUT/pytest.log" | tail -25
