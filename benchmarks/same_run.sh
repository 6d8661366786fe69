#!/usr/bin/env bash
# Same-run baselines in a device call: one benchmark command run in this checkout ("new") and in a copy of an older
# commit ("old"), in turns and each in its own process, so that every figure has its baseline from the same machine
# and call (docs/benchmarks.md). Make the copy beside the checkout before the call (it travels with the working tree;
# delete it before committing):
#   mkdir base && git archive <commit> specbench benchmarks tests tools | tar -x -C base
# then, in the call script after `. benchmarks/device_env.sh`:
#   ROUNDS=2 TIMEOUT_S=120 bash benchmarks/same_run.sh stack python3 -m benchmarks.bench_quant_linear --ms 1 64
# Round r of each side gets `--out $OUT/<name>_<side><r>` and logs to `$OUT/<name>_<side><r>.log`; a line per run gives
# its exit status and seconds. BASE names the copy (default: base).
set -uo pipefail
name=$1
shift
out_root=$(cd "$OUT" && pwd)
base=$(cd "${BASE:-base}" && pwd) || exit 2
for round in $(seq "${ROUNDS:-1}"); do
  for side in new old; do
    dir=$PWD path=${PYTHONPATH:-}
    if [ "$side" = old ]; then dir=$base path="$base${PYTHONPATH:+:$PYTHONPATH}"; fi
    out="$out_root/${name}_${side}${round}"
    t0=$(date +%s)
    (cd "$dir" && PYTHONPATH=$path timeout "${TIMEOUT_S:-300}" "$@" --out "$out" > "$out.log" 2>&1)
    echo "$name $side$round rc $? $(( $(date +%s) - t0 )) s"
  done
done
