"""Run the Gluon prototype's kernel on the CPU, one program at a time, with torch tensors (session 33).

Gluon has no interpreter. This one covers the subset ``gluon_w4a16.py`` uses, the way Triton's interpreter treats
``tl``: layouts are ignored and shared memory is a tensor. Asynchronous work is done as late as the kernel's waits
allow, so that a missing wait gives wrong results: a cp.async copy reads global memory when issued and writes shared
memory only when ``wait_group`` retires its group, and a wgmma reads its shared-memory operand only when
``warpgroup_mma_wait`` retires it. ``run(..., copies="early")`` writes each copy's shared memory when it is issued
instead (the hardware may land it any time in between), so that a buffer refilled while a wgmma in flight still reads
it gives wrong results too (session 35) (its register operand is a value taken at issue; early writes to
registers are ``tools.wgmma_hazards``'s to find, in the SASS). Barriers do nothing. Inline PTX has no meaning here,
so each asm string the kernel uses needs a torch twin (``ASM``). What it cannot check: timing, layouts, hardware.

    python gluon_interpret.py        # the prototype against an fp32 matmul of the dequantized weight
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import torch

from specbench.quantization.int4_convert import pair_asm

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "int32": torch.int32}


class Ptr:
    """A pointer argument plus element offsets (a scalar or a tensor of them)."""

    def __init__(self, base: torch.Tensor, offsets=0):
        self.base, self.offsets = base, offsets
        self.dtype = types.SimpleNamespace(element_ty=base.dtype)

    def __add__(self, other):
        return Ptr(self.base, self.offsets + other)

    __radd__ = __add__


def _where(ptr: Ptr, mask) -> tuple[torch.Tensor, torch.Tensor]:
    """(offsets, which of them the mask lets through), as tensors of one shape."""
    offs = torch.as_tensor(ptr.offsets)
    return offs, torch.broadcast_to(torch.as_tensor(True if mask is None else mask), offs.shape)


def _load(ptr: Ptr, mask=None, other=0.0, **hints):
    flat = ptr.base.reshape(-1)
    offs, ok = _where(ptr, mask)
    vals = flat[torch.where(ok, offs, 0)]
    return torch.where(ok, vals, torch.as_tensor(other, dtype=vals.dtype))


def _store(ptr: Ptr, value, mask=None, add=False):
    """Store (or add) ``value`` where ``mask``; returns the old values."""
    offs, ok = _where(ptr, mask)
    value = torch.broadcast_to(torch.as_tensor(value), offs.shape)
    flat = ptr.base.view(-1)
    old = flat[torch.where(ok, offs, 0)].clone()
    if add:
        flat.index_add_(0, offs[ok], value[ok].to(flat.dtype))
    else:
        flat[offs[ok]] = value[ok].to(flat.dtype)
    return old


class Shared:
    """A shared-memory descriptor: a view of a tensor."""

    def __init__(self, data: torch.Tensor):
        self.data = data

    def index(self, i):
        return Shared(self.data[i])

    def slice(self, start, length, dim=0):
        return Shared(self.data.narrow(dim, start, length))

    def permute(self, dims):
        return Shared(self.data.permute(*dims))

    def load(self, layout=None):
        return self.data.clone()

    def store(self, value):
        self.data.copy_(value)


def _pair_planes(words, zoff, scale=None):
    """``int4_convert.pair_asm`` in torch: plane j = (nibble j - z) (times s), in 16 bits."""
    q = [((words >> (4 * j)) & 0xF) for j in range(8)]
    base = 1024.0 if zoff.dtype == torch.float16 else 128.0
    planes = [(qj.to(torch.float32) + base).to(zoff.dtype) - zoff for qj in q]
    return tuple(p if scale is None else p * scale for p in planes)


ASM = {pair_asm("fp16", scale=True): lambda args: _pair_planes(*args),
       pair_asm("bf16", scale=True): lambda args: _pair_planes(*args),
       "mov.b32 $0, $1;": lambda args: args[0].clone()}


def _gl(pids, grid):
    """The ``gl`` namespace for one program of ``grid``."""
    def layout(*args, **kwargs):
        return None

    def full(shape, value, dtype, layout=None):
        return torch.full(tuple(shape), value, dtype=dtype)

    return types.SimpleNamespace(
        program_id=lambda axis: pids[axis], num_programs=lambda axis: grid[axis], float16=torch.float16, bfloat16=torch.bfloat16, float32=torch.float32,
        int32=torch.int32, int8=torch.int8, constexpr=lambda v: v, NVMMADistributedLayout=layout, DotOperandLayout=layout,
        BlockedLayout=layout, NVMMASharedLayout=layout, SwizzledSharedLayout=layout, SliceLayout=layout,
        allocate_shared_memory=lambda dtype, shape, layout: Shared(torch.zeros(tuple(shape), dtype=dtype)),
        arange=lambda start, end, layout=None: torch.arange(start, end), full=full,
        zeros=lambda shape, dtype, layout=None: torch.zeros(tuple(shape), dtype=dtype),
        static_range=range, thread_barrier=lambda: None, load=_load,
        store=lambda ptr, value, mask=None: _store(ptr, value, mask),
        atomic_add=lambda ptr, value, mask=None, sem=None: _store(ptr, value, mask, add=True),
        atomic_xchg=lambda ptr, value, mask=None, sem=None: _store(ptr, value, mask),
        broadcast=lambda a, b: torch.broadcast_tensors(a, b), convert_layout=lambda t, layout: t,
        inline_asm_elementwise=lambda asm, constraints, args, dtype, is_pure, pack: ASM[getattr(asm, "value", asm)](args),
    )


class Accumulator:
    """A wgmma chain's accumulator while some of its wgmmas are in flight."""

    def __init__(self, value: torch.Tensor):
        self.value = value


class Program:
    """One program's asynchronous work, done as late as its waits allow."""

    def __init__(self, copies: str = "late"):
        self.open, self.groups, self.mmas, self.early = [], [], [], copies == "early"

    def copy(self, smem: Shared, ptr: Ptr, mask=None):
        data = _load(ptr, mask, 0).to(smem.data.dtype)  # read now; written now ("early") or at its wait
        if self.early:
            smem.store(data)
        else:
            self.open.append((smem, data))

    def commit(self):
        self.groups.append(self.open)
        self.open = []

    def wait_copies(self, n):
        while len(self.groups) > n:
            for smem, data in self.groups.pop(0):
                smem.store(data)

    def mma(self, a, b, acc, is_async=False):
        acc = acc if isinstance(acc, Accumulator) else Accumulator(acc)
        self.mmas.append((acc, a, b))
        return acc

    def mma_wait(self, num_outstanding=0, deps=None):
        while len(self.mmas) > num_outstanding:
            acc, a, b = self.mmas.pop(0)
            b = b.data if isinstance(b, Shared) else b  # the shared operand as it is now
            if acc.value.dtype.is_floating_point:
                acc.value = acc.value + a.float() @ b.float()
            else:  # int8 operands: exact int32 sums
                acc.value = acc.value + (a.long() @ b.long()).to(acc.value.dtype)
        live = {id(acc) for acc, _, _ in self.mmas}
        out = [d.value if isinstance(d, Accumulator) and id(d) not in live else d for d in deps]
        return out[0] if len(out) == 1 else tuple(out)


def interpreted(jit_fn, pids, grid, state=None, copies="late"):
    """The Python function of a ``gluon.jit`` kernel bound to this interpreter's namespace for program ``pids``."""
    fn = jit_fn.fn
    env = dict(fn.__globals__)
    program = state if state is not None else Program(copies)
    env.update(gl=_gl(pids, grid), warpgroup_mma=program.mma, warpgroup_mma_wait=program.mma_wait,
               fence_async_shared=lambda: None,
               cp=types.SimpleNamespace(async_copy_global_to_shared=program.copy, commit_group=program.commit,
                                        wait_group=program.wait_copies))
    for name in fn.__code__.co_names:  # helper kernels it calls
        value = env.get(name)
        if hasattr(value, "fn") and type(value).__name__ == "GluonJITFunction":
            env[name] = interpreted(value, pids, grid, program)
    return types.FunctionType(fn.__code__, env, fn.__name__, fn.__defaults__, fn.__closure__)


def run(jit_fn, grid, *args, copies="late", **constexprs):
    """``jit_fn[grid](*args, **constexprs)`` on the CPU, tensors passed as pointers; ``num_warps`` is dropped;
    ``copies``: when cp.async copies land ("late": at their wait, "early": when issued)."""
    args = [Ptr(a) if isinstance(a, torch.Tensor) else a for a in args]
    constexprs.pop("num_warps", None)
    for p0 in range(grid[0]):
        for p1 in range(grid[1]):
            for p2 in range(grid[2]):
                interpreted(jit_fn, (p0, p1, p2), grid, copies=copies)(*args, **constexprs, num_warps=4)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import gluon_w4a16 as g

    from specbench.quantization import get_scheme, quantize_rtn
    from specbench.quantization.backends.triton_int4 import pack

    torch.manual_seed(0)
    worst = 0.0
    for n, k, m, bn, split, sym, dtype in [(256, 512, 5, 128, 1, True, torch.float16),
                                          (192, 1024, 17, 64, 2, False, torch.float16),
                                          (128, 768, 33, 128, 3, True, torch.bfloat16),
                                          (256, 512, 64, 256, 4, False, torch.bfloat16)]:
        qw = quantize_rtn(torch.randn(n, k) * 0.02, get_scheme("w4a16"), 128, sym)
        packed, scales, zeros = pack(qw, dtype)
        x = torch.randn(m, k).to(dtype)
        ref = x.float() @ qw.dequantize().t()
        bm = max(16, 1 << (m - 1).bit_length())
        grid = (-(-n // bn), -(-m // bm), split)
        counters = torch.zeros(grid[0] * grid[1], dtype=torch.int32)
        y = torch.empty(m, n, dtype=dtype)
        part = torch.empty(split, m, n)
        # x through the cp.async ring (session 35); copies landing as late and as early as the hardware may land them
        for x_ring, stages, copies in ((False, 4, "late"), (False, 4, "early"), (True, 3, "late"), (True, 3, "early"),
                                       (True, 4, "late"), (True, 4, "early")):
            run(g.w4a16_wgmma_kernel, grid, x, packed, scales, scales if zeros is None else zeros, y, part, counters,
                m, n, x.stride(0), y.stride(0), K=k, BN=bn, BM=bm, SPLIT=split, HAS_ZEROS=zeros is not None,
                BF16=dtype == torch.bfloat16, STAGES=stages, num_warps=4, X_RING=x_ring, copies=copies)
            err = ((y.float() - ref).norm() / ref.norm()).item()
            worst = max(worst, err)
            print(f"N {n} K {k} M {m} BN {bn} split {split} {'symmetric' if sym else 'zero points'} "
                  f"{str(dtype)[6:]}{' x ring' if x_ring else ''} stages {stages}, copies {copies}: rel. error {err:.2e}, "
                  f"counters left {int(counters.abs().sum())}")
    assert worst < 1e-2, worst


if __name__ == "__main__":
    main()
