"""The SASS check for writes to a wgmma's register operand while it may be in flight (``tools.wgmma_hazards``)."""

import os
import re

import pytest

from specbench.wgmma_guard import destinations, early_writes, loops


def _loop(*body: str) -> str:
    lines = [".L_x_0:"] + [f"        /*{16 * i:04x}*/                   {op} ;" for i, op in enumerate(body)]
    return "\n".join(lines + [f"        /*{16 * len(body):04x}*/               @P0 BRA `(.L_x_0) ;"])


def _writes(sass: str) -> list[tuple[str, list[int], int]]:
    (body,) = loops(sass)
    return early_writes(body)


def test_destinations_take_the_width_of_loads_and_wide_products():
    assert destinations("LDS.64", "R68") == [68, 69] and destinations("LDG.E.128", "R8") == [8, 9, 10, 11]
    assert destinations("LDSM.16.M88.4", "R4") == [4, 5, 6, 7] and destinations("LDSM.16.M88", "R4") == [4]
    assert destinations("IMAD.WIDE", "R2") == [2, 3] and destinations("HADD2", "R85") == [85]
    assert destinations("STS", "[R3+0x10]") == [] and destinations("ISETP.GT.AND", "P0") == []


def test_a_write_to_the_registers_of_a_wgmma_group_still_in_flight_is_found():
    def loop(left: int, last: str = "HADD2 R57, R1, R2") -> str:  # two groups, at most ``left`` in flight after each
        return _loop("LDS.64 R68, [R13+0x100]", "WARPGROUP.ARRIVE",
                     "HGMMA.64x64x16.F32 R24, R56, gdesc[UR16], R24, gsb0", f"WARPGROUP.DEPBAR.LE gsb0, {left:#x}",
                     "HGMMA.64x64x16.F32 R24, R68, gdesc[UR16], R24, gsb0", f"WARPGROUP.DEPBAR.LE gsb0, {left:#x}",
                     last)

    (write,) = _writes(loop(1))  # the second group's registers, written at the loop's top
    assert write[0].startswith("/*0000*/") and write[1] == [68, 69] and write[2] == 1
    assert [w[1] for w in _writes(loop(2))] == [[68, 69], [57]]  # both groups in flight: the first's written too
    assert _writes(loop(1, last="WARPGROUP.DEPBAR.LE gsb0, 0x0")) == []  # all done before the loop's end


def test_wgmmas_without_gsb0_join_the_next_group_and_smem_operands_are_not_registers():
    sass = _loop("HGMMA.64x16x16.F32 R32, R96, gdesc[UR12], R32",
                 "HGMMA.64x16x16.F32 R24, R100, gdesc[UR12], R24, gsb0",
                 "HGMMA.64x64x16.F32 R40, gdesc[UR8], R40, gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x1",
                 "MOV R97, R1", "MOV R101, R1")
    assert [w[1] for w in _writes(sass)] == []  # the pair's group is done; the smem-operand one has no registers
    assert [w[1] for w in _writes(sass.replace("gsb0, 0x1", "gsb0, 0x2"))] == [[97], [101]]


def test_the_w4a16_dot_modes_build_for_sm90_without_early_writes():
    """Each mode with the weight as the register operand, built as the table's entries are (no GPU needed). Triton
    3.6 with its ptxas 12.8 wrote the registers of up to seven wgmmas in flight in 60 of the H200 table's builds
    while the product was added to the accumulator (docs/quantization.md)."""
    triton = pytest.importorskip("triton")
    if not os.path.exists(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "nvdisasm")):
        pytest.skip("triton's bundled nvdisasm is not here")
    import argparse

    from tools.int4_sass import compile_sm90, on_cubin

    for deq, bm, bn, warps, extra in ((9, 64, 64, 4, {}), (7, 16, 128, 4, {}), (5, 64, 128, 8, {"channel": True}),
                                      (9, 64, 128, 4, {"zeros": True})):
        args = {**dict(fp16=True, channel=False, zeros=False, whole_k=False, gemv=False, BK=128, uneven=False,
                       scales_ahead=False, stages=4), **extra}
        sass = on_cubin(compile_sm90(argparse.Namespace(BM=bm, BN=bn, deq=deq, warps=warps, **args)), "nvdisasm", "-c")
        assert re.search(r"HGMMA\S+ R\d+, R\d+,", sass), deq  # the weight in registers: a case the check covers
        writes = [w for body in loops(sass) for w in early_writes(body)]
        assert writes == [], (deq, bm, bn, warps, extra, writes[:3])


def _unsafe_listing() -> str:
    return _loop("LDS.64 R68, [R13+0x100]", "WARPGROUP.ARRIVE", "HGMMA.64x64x16.F32 R24, R56, gdesc[UR16], R24, gsb0",
                 "WARPGROUP.DEPBAR.LE gsb0, 0x1", "HADD2 R57, R1, R2")


def test_the_guard_refuses_an_unsafe_build_by_name_and_reads_each_build_once(monkeypatch, tmp_path):
    from types import SimpleNamespace

    from specbench import wgmma_guard

    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(wgmma_guard, "_checked", {})
    monkeypatch.setattr(wgmma_guard, "_safe", set())
    listings = {b"unsafe": _unsafe_listing(), b"safe": _unsafe_listing().replace("gsb0, 0x1", "gsb0, 0x0")}
    read = []
    monkeypatch.setattr(wgmma_guard, "disassemble", lambda cubin: read.append(cubin) or listings[cubin])
    unsafe = SimpleNamespace(hash="ab" * 32, asm={"cubin": b"unsafe"})
    safe = SimpleNamespace(hash="cd" * 32, asm={"cubin": b"safe"})
    for _ in range(2):
        with pytest.raises(wgmma_guard.UnsafeBuildError, match=r"the kernel X: .*1 writes, the first: .*HADD2 R57"):
            wgmma_guard.check(unsafe, lambda: "the kernel X")
        wgmma_guard.check(safe, lambda: "the kernel Y")
    assert read == [b"unsafe", b"safe"]  # once each in a process
    wgmma_guard._checked.clear()
    wgmma_guard._safe.clear()  # a new process: the verdicts kept in Triton's cache are read, not the SASS
    with pytest.raises(wgmma_guard.UnsafeBuildError):
        wgmma_guard.check(unsafe, lambda: "the kernel X")
    wgmma_guard.check(safe, lambda: "the kernel Y")
    assert read == [b"unsafe", b"safe"]
    wgmma_guard.check(None, lambda: "interpreted")  # the interpreter's launches return no build
    wgmma_guard.check(SimpleNamespace(hash="ef" * 32, asm={"ptx": ""}), lambda: "no cubin")
    monkeypatch.setattr(wgmma_guard, "ENABLED", False)  # SPECBENCH_WGMMA_GUARD=0
    wgmma_guard.check(SimpleNamespace(hash="01" * 32, asm={"cubin": b"unsafe"}), lambda: "off")


def test_the_guard_passes_a_real_sm90_build(monkeypatch, tmp_path):
    triton = pytest.importorskip("triton")
    if not os.path.exists(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "nvdisasm")):
        pytest.skip("triton's bundled nvdisasm is not here")
    import argparse

    from specbench import wgmma_guard
    from tools.int4_sass import compile_sm90

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    kernel = compile_sm90(argparse.Namespace(BM=16, BN=128, deq=7, warps=4, fp16=True, channel=False, zeros=False,
                                             whole_k=False, gemv=False, BK=128, uneven=False, scales_ahead=False,
                                             stages=4))
    wgmma_guard.check(kernel, lambda: "DEQ 7")
    assert id(kernel) in wgmma_guard._safe
    assert open(os.path.join(tmp_path, *_cache_path(kernel.hash))).read() == "safe"


def _cache_path(build_hash: str) -> list[str]:
    from triton.runtime.cache import get_cache_manager

    from specbench.wgmma_guard import VERDICT_FILE

    return [os.path.relpath(get_cache_manager(build_hash).cache_dir, os.environ["TRITON_CACHE_DIR"]), VERDICT_FILE]


def test_the_guard_says_when_it_cannot_read_a_build(monkeypatch):
    from types import SimpleNamespace

    from specbench import wgmma_guard

    triton = pytest.importorskip("triton")
    monkeypatch.setattr(triton.knobs.nvidia.nvdisasm, "path", "/nonexistent/nvdisasm", raising=False)
    with pytest.raises(RuntimeError, match="cannot read a build's SASS .*SPECBENCH_WGMMA_GUARD=0"):
        wgmma_guard.disassemble(b"")
