#!/usr/bin/env bash
# One device call of the shape-only campaign: one resumable chunk of BUDGET_S seconds into the newest unfinished
# results/h200/<date>/ (the repo's copy travels with the call), then that folder, tarred, under $OUT. Unpack it over
# the checkout and commit it; the next call resumes where this one stopped. Wheels missing on the machine travel in
# .whl/ (hydra-core, omegaconf, antlr4).
# ROOT names a new campaign folder (a rerun after a speed-up; later calls find it as the newest unfinished one);
# SET adds Hydra overrides to every run (e.g. "engine.compile=true engine.compile_scope=layer").
#   BUDGET_S=470 [RETRY=1] [ONLY="pattern ..."] [ROOT=results/h200/<date>b] [SET="..."] bash benchmarks/campaign_h200.sh
set -uo pipefail
OUT=${OUT:-campaign_out}
BUDGET_S=${BUDGET_S:-470}
. benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -m specbench.campaign h200 --budget-s "$BUDGET_S" ${ONLY:+--only $ONLY} ${RETRY:+--retry-failed} \
    ${ROOT:+--root $ROOT} ${SET:+--set $SET} 2>&1 | tee "$OUT/chunk.log"
root=${ROOT:-$(ls -d results/h200/*/campaign.json | sort | tail -1 | xargs dirname)}
tar czf "$OUT/campaign.tgz" "$root/campaign.json" "$root/runs" "$root/logs"
python3 -m specbench.campaign h200 --root "$root" --list | tail -1
