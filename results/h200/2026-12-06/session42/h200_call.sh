# Session 42, one H200 call (~8 min; carry [".whl", "base"], base/ = 27a9148 as session 41's README says): the short
# form of session 40's scaled W4A8 g128 tune (70B, buckets 64 and 32) with its stacks and agreement, then
# tile_reads.sh on the table it leaves, packed into reads.tgz (at most 8 files come back).
MODELS=llama-3-70b BUCKETS="64 32" MS="1 32 64" TUNE_S=170 bash results/h200/2026-12-06/session40/scaled_h200.sh
MS="32 64" READS_S=${READS_S:-90} bash results/h200/2026-12-06/session42/tile_reads.sh
OUT=$(cd "$OUT" && pwd); tar czf "$OUT/reads.tgz" -C "$OUT" $(cd "$OUT" && ls -d w4a* 2>/dev/null) && rm -rf "$OUT"/w4a*
