# Session 43, the short H200 call (~7 min; carry [".whl", "base"], base/ = 27a9148) for a budget under 10 min: session
# 40's scaled W4A8 g128 tune on the 70B buckets 64 / 32 with a 150 s tune, the stacks against base/ and the W4A8
# agreement; no tile reads.
MODELS=llama-3-70b BUCKETS="64 32" MS="1 32 64" TUNE_S=150 bash results/h200/2026-12-06/session40/scaled_h200.sh
