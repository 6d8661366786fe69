"""Diagnosis (session 25): what the W4A16 launches of the 70B verify forward see (shape, stride, alignment, config)."""
import collections
import sys
import torch
import specbench.quantization.int4_kernel as ik
import specbench.quantization.backends.triton_int4 as ti

seen = collections.Counter()
orig = ik.launch
def spy(x, packed, scales, zeros, counters, group, cfg):
    seen[(tuple(x.shape), tuple(x.stride()), x.data_ptr() % 128, x.dtype, packed.shape[1], str(cfg))] += 1
    return orig(x, packed, scales, zeros, counters, group, cfg)
ti.launch = spy

from benchmarks import profile_sd_step
profile_sd_step.main(sys.argv[1:])
for key, count in sorted(seen.items(), key=lambda kv: kv[0][0]):
    print(count, key)
