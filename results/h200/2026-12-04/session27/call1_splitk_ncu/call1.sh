STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_quant_gpu.py > "$OUT/pytest.log" 2>&1; echo "pytest rc $?"; tail -3 "$OUT/pytest.log"
A="--shapes 6144x4096 4096x4096 28672x4096 4096x14336 10240x8192 8192x8192 57344x8192 8192x28672 --ms 1 16 32 --no-floor"
for r in new old plain new2 old2; do
  case $r in
    new*) (timeout 150 python3 -m benchmarks.profile_int4 $A --out "$OUT/p_$r" > "$OUT/p_$r.log" 2>&1) ;;
    old*) (cd base && PYTHONPATH=/tmp/site timeout 150 python3 -m benchmarks.profile_int4 $A --out "$OUT/p_$r" > "$OUT/p_$r.log" 2>&1) ;;
    plain) (timeout 150 python3 diag_plain.py $A --out "$OUT/p_$r" > "$OUT/p_$r.log" 2>&1) ;;
  esac
  echo "$r rc $?"
done
python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
runs = {r: json.load(open(f"{out}/p_{r}/profile_int4.json")) for r in ("new", "old", "plain", "new2", "old2") if os.path.exists(f"{out}/p_{r}/profile_int4.json")}
keys = [(x["shape"], x["M"]) for x in runs["new"] if x["kernel"] == "w4a16"]
print("shape M split | " + " ".join(runs))
for key in keys:
    vals = []
    for r, rows in runs.items():
        v = [x for x in rows if x["kernel"] == "w4a16" and (x["shape"], x["M"]) == key]
        vals.append(f"{v[0]['ms'] * 1e3:7.2f}" if v else "   -   ")
    cfg = [x for x in runs["new"] if (x.get("shape"), x.get("M")) == key][0]["config"]
    print(key[0], key[1], cfg["split"], "|", " ".join(vals))
PY
NCU="--kernel-name regex:w4a16"
timeout 150 ncu $NCU --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
  python3 -m benchmarks.profile_int4 --ncu --shapes 4096x4096 28672x4096 --ms 1 32 > "$OUT/ncu_sections.txt" 2>&1; echo "ncu1 rc $?"
timeout 120 ncu $NCU --metrics "regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$" \
  python3 -m benchmarks.profile_int4 --ncu --shapes 4096x4096 28672x4096 57344x8192 --ms 1 32 64 > "$OUT/ncu_stalls.txt" 2>&1; echo "ncu2 rc $?"
grep -E "w4a16_kernel|issue_stalled" "$OUT/ncu_stalls.txt" | awk '$NF+0 > 0.3 || /w4a16/' | head -150
tar czf "$OUT/profiles.tgz" -C "$OUT" p_new p_old p_plain p_new2 p_old2 2>/dev/null
