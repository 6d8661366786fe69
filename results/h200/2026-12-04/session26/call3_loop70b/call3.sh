STEPS=none; . benchmarks/device_env.sh
OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
T=tests/test_tree_on_device.py::test_best_only_in_a_compiled_graph_gives_each_rows_argmax
python3 -m pytest -q -p no:cacheprovider $T > "$OUT/t_new.log" 2>&1; echo "new rc $? $(( $(date +%s) - t0 )) s"
(cd base && PYTHONPATH=/tmp/site python3 -m pytest -q -p no:cacheprovider $T > "$OUT/t_old.log" 2>&1; echo "old rc $? $(( $(date +%s) - t0 )) s")
for v in new old; do
  dir=.; [ $v = old ] && dir=base
  (cd $dir && PYTHONPATH=/tmp/site timeout 200 python3 -m benchmarks.bench_sd_loop --out "$OUT/loop70b_$v" \
        --model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer \
        --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2 > "$OUT/loop70b_$v.log" 2>&1)
  echo "loop70b $v rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\| (ar|hierspec) " "$OUT/loop70b_$v/bench_sd_loop.md"
  grep -E "^- hierspec" "$OUT/loop70b_$v/bench_sd_loop.md" | cut -c1-260
done
