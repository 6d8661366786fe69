# Session 47, one device call (carry [".whl", "base", "base_head"]; base/ = 27a9148, base_head/ = d3a5888): on an
# H200 the W4A8 tune (session 44's h200_call.sh: two #15 floors within reach), on an H100 the fp16 W4A16 re-tune of
# buckets 32 / 64 into the H100's own table and the 70B HierSpec loop (session 46's fp16_hierspec.sh).
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  TUNE_S=150 AROUND_S=60 bash results/h200/2026-12-06/session44/h200_call.sh
else
  SKIP_GATED=1 bash results/h200/2026-12-07/session46/fp16_hierspec.sh  # step 1 ran on an H100 in session 46
fi
