# Session 38's gemv_groups.patch rebased in session 42 onto session 41's tests (a three-way apply, no conflict; the
# int8-activation interpreter tests pass with it: 7 passed). An H200, ~6 min, after ../h200_call.sh. Apply the patch
# and make base/ from HEAD first:
#   git apply results/h200/2026-12-06/session42/next_w4a8_gemv_groups/gemv_groups.patch
#   mkdir base && git archive HEAD specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets/tiny/*
# The steps are session 38's (GPU tests, the g128 M = 1 gemv entries re-tuned with tiles of several groups, stacks
# against base/, agreement).
exec bash "$(dirname "$0")/../../session38/next_w4a8_gemv_groups/call1.sh"
