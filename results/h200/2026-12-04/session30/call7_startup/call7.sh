STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
for run in 1 2; do
  s=$(date +%s)
  timeout $([ $run = 1 ] && echo 170 || echo 120) python3 -m specbench model=llama3_8b model.shape_only=true dataset=synthetic \
      dataset.synthetic_questions=1 dataset.max_new_tokens=128 runtime=cuda runtime.dtype=bfloat16 drafter=eagle \
      drafter.head=random drafter.topk=10 drafter.depth=6 drafter.tree_size=60 compare=[] engine.compile=true \
      timing.acceptance=replay timing.replay_tau=4.53 timing.warmup=1 output.root="$OUT/runs$run" > "$OUT/run$run.log" 2>&1
  echo "run$run rc $? wall $(( $(date +%s) - s )) s"
  python3 - "$OUT/runs$run" <<'PY'
import sys, glob, pandas as pd
files = glob.glob(f"{sys.argv[1]}/**/*.parquet", recursive=True)
for f in files:
    d = pd.read_parquet(f)
    cols = [c for c in ("method", "drafter.name", "target_build_s", "warmup_s", "tok_s", "tokens_per_s") if c in d.columns]
    print(f.split("/")[-1], d[cols].to_dict("records"))
PY
done
echo "total $(( $(date +%s) - t0 )) s"
