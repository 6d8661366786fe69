# Session 47, one device call (carry [".whl", "base", "base_main"]; base/ = 27a9148, base_main/ = main before the
# deferred split-K sums): on an H200 the W4A8 tune (session 44's h200_call.sh: two #15 floors within reach), on an
# H100 the deferred split-K sums against main (deferred.sh).
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  TUNE_S=120 AROUND_S=45 bash results/h200/2026-12-06/session44/h200_call.sh
else
  bash results/h200/2026-12-07/session47/deferred.sh
fi
