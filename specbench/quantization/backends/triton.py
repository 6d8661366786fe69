"""The ``triton`` backend: specbench's own Triton kernels, one per scheme (w4a16 in ``triton_int4``; w8a8_int8
and w4a8 in ``triton_a8``)."""

from __future__ import annotations

from specbench.quantization.backends import Backend, register
from specbench.quantization.backends.triton_a8 import TritonA8
from specbench.quantization.backends.triton_int4 import TritonInt4

IMPLS = {"w4a16": TritonInt4(), **{s: TritonA8() for s in TritonA8.schemes}}


@register
class Triton(Backend):
    name = "triton"
    schemes = tuple(IMPLS)
    package, extra = "triton", "gpu"

    def limits(self, qw, dtype):
        return IMPLS[qw.scheme.name].limits(qw, dtype)

    def build(self, qw, dtype):
        return IMPLS[qw.scheme.name].build(qw, dtype)

    def describe(self, qw):
        return IMPLS[qw.scheme.name].describe(qw)
