STEPS=none; . benchmarks/device_env.sh; O=$OUT; A=specbench/quantization/act_quant_kernel.py; cp $A /tmp/new_aq.py
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 -m benchmarks.bench_act_quant --out $O/aq_new --ms 1 64 --ks 8192 28672 --blocks 0 2048 8192 --parts 0 1 2 4 > $O/aq_new.log 2>&1; tail -4 $O/aq_new.log | cut -c1-900
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_quant_triton_a8_gpu.py 2>&1 | tail -2
cp old_aq.py $A; python3 -m benchmarks.bench_act_quant --out $O/aq_old --ms 1 64 --ks 8192 28672 --blocks 0 > $O/aq_old.log 2>&1; tail -4 $O/aq_old.log
run() { SPECBENCH_A8_PREFETCH=$2 timeout 120 python3 -m benchmarks.bench_quant_linear --out $O/$1 --models llama-3-70b --backends triton --schemes w4a8 w8a8_int8 --ms 1 16 64 --no-dense > $O/$1.log 2>&1; echo "== $1 rc $?"; grep -E "^\| llama" $O/$1.log | cut -d'|' -f3,6-10; }
run old_pf0 0; cp /tmp/new_aq.py $A
run new_pf0 0; run new_pf4 4; run new_pf8 8
cp old_aq.py $A; run old_pf0b 0; cp /tmp/new_aq.py $A; run new_pf4b 4
tar czf $O/all.tgz -C $O aq_new aq_old old_pf0 new_pf0 new_pf4 new_pf8 old_pf0b new_pf4b; rm -rf $O/aq_new $O/aq_old $O/old_pf0 $O/new_pf0 $O/new_pf4 $O/new_pf8 $O/old_pf0b $O/new_pf4b
cat $O/*.log > $O/logs.txt; rm $O/*.log
