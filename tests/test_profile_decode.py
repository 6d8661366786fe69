"""The profile helpers' bookkeeping, on recorded events (no GPU needed)."""

from __future__ import annotations

from types import SimpleNamespace

from torch.autograd import DeviceType

from benchmarks.profile_decode import by_position


def _event(name: str, start: float, end: float, device=DeviceType.CUDA):
    return SimpleNamespace(name=name, device_type=device, time_range=SimpleNamespace(start=start, end=end))


def test_by_position_averages_a_repeated_kernel_per_position_in_launch_order():
    # two layers of (q/k/v 1 us, o 2 us, gate/up 3 us, down 4 us / 6 us), listed out of order, with other kernels and a
    # host event of the same name between them
    durations = [1, 2, 3, 4, 1, 2, 3, 6]
    events = [_event("w4a16_kernel", 10 * i, 10 * i + d) for i, d in enumerate(durations)]
    events += [_event("norm", 10 * i + 8, 10 * i + 9) for i in range(8)]
    events.append(_event("w4a16_kernel", 0, 100, DeviceType.CPU))
    prof = SimpleNamespace(events=lambda: list(reversed(events)))
    assert by_position(prof, "w4a16_kernel", 4) == [1.0, 2.0, 3.0, 5.0]
