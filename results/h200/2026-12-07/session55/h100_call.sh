# Session 55 (either GPU, carry [".whl"], ~6 min): session 54's stall-reason ncu (ncu_stalls.sh), then `tune --resume`
# on a GPU for the first time: a tune of the 8B W4A16 g128 linears at M = 1 cut short by a 10 s budget, the same
# command with --resume (it should time only what the first left), and once more (it should time nothing).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
name=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$name"
case $name in *H200*) gpu=h200 ;; *H100*) gpu=h100 ;; *) echo "no table for $name"; exit 1 ;; esac
tune() {
  timeout 200 python3 -m specbench.quantization.tune --gpu $gpu --schemes w4a16 --models llama-3-8b --buckets 1 16 \
    --groups 128 --around-entry --workers 14 --out "$OUT/resume.json" "$@"
}
tune --budget-s 10 > "$OUT/tune1.log" 2>&1; echo "tune1 rc $?"; grep -E "^(\[|--resume)" "$OUT/tune1.log" | cut -c1-160
tune --budget-s 120 --resume > "$OUT/tune2.log" 2>&1; echo "tune2 rc $?"; grep -E "^(\[|--resume)" "$OUT/tune2.log" | cut -c1-160
tune --budget-s 120 --resume > "$OUT/tune3.log" 2>&1; echo "tune3 rc $?"; grep -E "^(\[|--resume|compiling)" "$OUT/tune3.log" | cut -c1-160
python3 -c "import json, sys; e = json.load(open(sys.argv[1]))['entries']; print({k: {m: ('run' in v) for m, v in b.items() if m in ('1', '16')} for k, b in e.items() if k.endswith('x4096:g128') or k == '4096x14336:g128'})" "$OUT/resume.json"
OUT="$OUT" bash results/h200/2026-12-07/session54/ncu_stalls.sh
cd "$OUT" && tar czf logs.tgz tune*.log resume.json && rm -f tune*.log resume.json; ls
