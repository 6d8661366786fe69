# Session 38's gemv_groups.patch rebased in session 40 onto the scaled dot tiles (conflicts in the module docstring
# and the interpreter cases only; interpreter tests pass with it and fail with the word-to-group index broken).
# An H200, ~6 min. Apply the patch and make base/ from HEAD first:
#   git apply results/h200/2026-12-06/session40/next_w4a8_gemv_groups/gemv_groups.patch
#   mkdir base && git archive HEAD specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets/tiny/*
# The steps are session 38's (GPU tests, the g128 M = 1 gemv entries re-tuned with tiles of several groups, stacks
# against base/, agreement); run it after the scaled tune (../scaled_h200.sh) has been adopted.
exec bash "$(dirname "$0")/../../session38/next_w4a8_gemv_groups/call1.sh"
