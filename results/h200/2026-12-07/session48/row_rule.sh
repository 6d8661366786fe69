# Session 48's next call (~4 min, an H200; carry [".whl", "base_prev"], base_prev/ = dee5a81, session 47's code): the
# 70B HierSpec loop with the norm consumers' row limit (`DEFER_MAX_ROW`: the 70B o/down at 8 splits sum in the kernel
# again) against session 47's deferral everywhere. BASE=base_main (431da79, before any deferral) for the other
# baseline.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
BASE=${BASE:-base_prev} ROUNDS=1 TIMEOUT_S=${LOOP_S:-150} bash benchmarks/same_run.sh loop python3 -m \
  benchmarks.bench_sd_loop --model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer \
  --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods ar,hierspec --repeats 2
for f in "$OUT"/loop_*1; do echo "== $f"; grep -E "^\| (ar|hierspec) |^- (ar|hierspec):" "$f".log | cut -c1-300; done
cd "$OUT" && tar czf res.tgz $(ls -d loop_* 2>/dev/null) && rm -rf loop_*; ls
echo "total $(( $(date +%s) - t0 )) s"
