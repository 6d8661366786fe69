# Prepared in session 39 (~5 min, an H200; on an H100 the tune writes an H100 table from a copy of the H200 one, and
# that copy runs as the H200 table's sibling): scaled_one_dot.patch, the second version of the codes times QQQ's
# integer group scales (A8Config.scaled). Against scaled_codes.patch (call 1, measured as call5_h100: the tune kept
# no scaled entry) a K tile of several groups takes one dot (one wgmma wait a K step, not one a group) and the group
# scales are loaded a K step ahead (they were loaded at the top of the step and consumed before its first wgmma).
# sm_90 builds, instructions a K step (float scaling / scaled): BM 64 x BK 256 349 / 286, BM 64 x BK 512 612 / 494,
# BM 32 x BK 256 264 / 266, BM 64 x BK 128 194 / 193, BM 16 x BK 128 127 / 182. Apply the patch to 91eb93b or later
# and make base/ from that commit first:
#   git apply results/h200/2026-12-06/session39/next_scaled_codes/scaled_one_dot.patch
#   mkdir base && git archive HEAD specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets/tiny/*
# Then the g128 entries of buckets 64/32/16 re-tuned around their entries (each entry's neighbours include it with
# `scaled` on), the int8-activation GPU tests with that table, the stacks against base/. Adopt (on an H200) if the
# g128 stacks at M = 32-64 are faster; for the full effect follow with the full-grid tune of the g128 buckets 32/64.
# The steps are call1.sh's (it times whichever patch is applied).
exec bash "$(dirname "$0")/call1.sh"
