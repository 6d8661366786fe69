"""Diagnosis (session 25): one layer of the 70B verify forward, kernel by kernel (start, duration, stream)."""
import sys
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile
from benchmarks import profile_decode

captured = {}
orig = profile_decode.profiled
def spy(fn, steps, repeated=None):
    out = orig(fn, steps, repeated)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(); torch.cuda.synchronize()
    ev = sorted((e for e in prof.events() if e.device_type == DeviceType.CUDA), key=lambda e: e.time_range.start)
    captured[len(captured)] = ev
    return out
profile_decode.profiled = spy
from benchmarks import profile_sd_step
profile_sd_step.profiled = spy
profile_sd_step.main(sys.argv[1:])
for which, name in ((0, "verify"), (1, "decode")):
    ev = captured[which]
    w = [i for i, e in enumerate(ev) if e.name == "w4a16_kernel"]
    start = w[4 * 40]  # layer 40's q/k/v
    t0 = ev[start].time_range.start
    print(f"--- {name}: layer 40")
    for e in ev[start - 3: w[4 * 41] + 1]:
        print(f"{e.time_range.start - t0:9.2f} {e.time_range.end - e.time_range.start:8.2f} dev{e.device_index} "
              f"{getattr(e, 'stream', '?')} {e.name[:70]}")
