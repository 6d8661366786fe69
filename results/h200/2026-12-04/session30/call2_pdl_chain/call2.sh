STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
python3 -c "import torch._inductor.config as c; print('inductor enable_pdl', getattr(c.triton, 'enable_pdl', 'absent'))"
t0=$(date +%s)
export SPECBENCH_PDL_CHAIN=1 TORCHINDUCTOR_ENABLE_PDL=1
timeout 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_attention.py tests/test_kv_cache.py tests/test_quant_gpu.py tests/test_lossless_greedy.py tests/test_graphs.py -x > "$OUT/pytest_chain.log" 2>&1
echo "pytest chain rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest_chain.log"
P="--model llama-3-8b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --tokens 31 --steps 10"
for v in off ours chain; do
  case $v in off) e="SPECBENCH_PDL_CHAIN=0 TORCHINDUCTOR_ENABLE_PDL=0";; ours) e="SPECBENCH_PDL_CHAIN=1 TORCHINDUCTOR_ENABLE_PDL=0";; chain) e="SPECBENCH_PDL_CHAIN=1 TORCHINDUCTOR_ENABLE_PDL=1";; esac
  env $e timeout 100 python3 -m benchmarks.profile_sd_step --out "$OUT/prof8_$v" $P > "$OUT/prof8_$v.log" 2>&1
  echo "prof8 $v rc $? $(( $(date +%s) - t0 )) s"; grep -E "^(decode|verify|expand):" "$OUT/prof8_$v.log"
done
L="--model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2"
for v in chain off; do
  case $v in off) e="SPECBENCH_PDL_CHAIN=0 TORCHINDUCTOR_ENABLE_PDL=0";; chain) e="SPECBENCH_PDL_CHAIN=1 TORCHINDUCTOR_ENABLE_PDL=1";; esac
  env $e timeout 170 python3 -m benchmarks.bench_sd_loop --out "$OUT/loop_$v" $L > "$OUT/loop_$v.log" 2>&1
  echo "loop $v rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\| (ar|hierspec)" "$OUT/loop_$v/bench_sd_loop.md"
done
grep -E "^- (ar|hierspec)" "$OUT"/loop_*/bench_sd_loop.md | cut -c1-400
tar czf "$OUT/res.tgz" -C "$OUT" prof8_off prof8_ours prof8_chain loop_chain loop_off prof8_off.log prof8_ours.log prof8_chain.log loop_chain.log loop_off.log 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
