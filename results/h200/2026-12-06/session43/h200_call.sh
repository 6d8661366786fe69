# Session 43, one H200 call (~8 min; carry [".whl", "base"], base/ = 27a9148): session 42's h200_call.sh with the
# tile reads cut to W4A16 g128 at M = 32 / 64 on the 70B and 8B shapes, now with the reads + MMA variant.
MODELS=llama-3-70b BUCKETS="64 32" MS="1 32 64" TUNE_S=170 bash results/h200/2026-12-06/session40/scaled_h200.sh
MODELS="llama-3-70b llama-3-8b" SCHEMES_GROUPS="w4a16:128" MS="32 64" READS_S=${READS_S:-90} \
  bash results/h200/2026-12-06/session42/tile_reads.sh
OUT=$(cd "$OUT" && pwd); tar czf "$OUT/reads.tgz" -C "$OUT" $(cd "$OUT" && ls -d w4a* 2>/dev/null) && rm -rf "$OUT"/w4a*
