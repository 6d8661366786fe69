"""Refuse a Triton build that writes the register operand of a wgmma still in flight.

A Hopper wgmma whose A operand is in registers may read them after it issues; PTX makes writing them before a
``wgmma.wait_group`` that covers the wgmma undefined, so such a build's results depend on timing. ptxas before CUDA
13.3 does not always keep those registers apart: Triton 3.6 with its ptxas 12.8 wrote them in 60 of the H200
table's W4A16 builds while the kernel added its products (docs/quantization.md). The kernels now wait for their
products, but another Triton or ptxas may schedule them differently, so ``check`` reads the SASS of every build
specbench launches (nvdisasm, bundled with Triton) and raises ``UnsafeBuildError`` naming the kernel, config and
ptxas. Each verdict is kept beside the build in Triton's cache, so a build is read once, not once per process.
``SPECBENCH_WGMMA_GUARD=0`` turns the check off.

The reader: each loop (a backward branch) is read twice over, tracking the wgmma groups in flight (an
``HGMMA``/``IGMMA`` ending in ``gsb0`` closes one, ``WARPGROUP.DEPBAR.LE gsb0, n`` leaves at most n), and every
instruction of the second pass whose destination is an A register of a group still in flight is reported.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator

INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")
A_REGISTERS = 4  # a warpgroup MMA's A fragment: 64 rows of 32 bytes over 128 threads, whatever the type
ENABLED = os.environ.get("SPECBENCH_WGMMA_GUARD", "1") != "0"
VERDICT_FILE = "specbench_wgmma_guard.txt"
_checked: dict[str, str | None] = {}  # build hash -> None (safe) or what was found
_safe: set[int] = set()  # ids of compiled kernels found safe: a launch's check is one set lookup


class UnsafeBuildError(RuntimeError):
    """A build whose wgmmas may read registers already overwritten."""


def loops(sass: str) -> Iterator[list[str]]:
    """Each loop body of a listing: the lines from a label to a backward branch to it."""
    lines, labels = sass.splitlines(), {}
    for i, line in enumerate(lines):
        if m := re.match(r"\s*(\.L_x_\d+):", line):
            labels[m.group(1)] = i
        b = re.search(r"BRA\s+`?\(?(\.L_x_\d+)", line)
        if b and labels.get(b.group(1), i) < i:
            yield lines[labels[b.group(1)]:i + 1]


def destinations(opcode: str, operand: str) -> list[int]:
    """The registers an instruction writes, from its opcode and first operand ([] for stores, branches, waits)."""
    reg = re.fullmatch(r"R(\d+)(?:\.reuse)?", operand.strip())
    if not reg:
        return []
    width = 1
    if opcode.startswith("LDSM"):
        width = 4 if opcode.endswith(".4") else 2 if opcode.endswith(".2") else 1
    elif opcode.startswith(("LD", "ATOM")):
        width = 4 if ".128" in opcode else 2 if ".64" in opcode else 1
    elif ".WIDE" in opcode:
        width = 2
    return [int(reg.group(1)) + i for i in range(width)]


def early_writes(body: list[str]) -> list[tuple[str, list[int], int]]:
    """(instruction, registers, groups in flight) for each write, in a loop's steady state, to an A register of a
    wgmma group that may still be in flight."""
    in_flight: list[set[int]] = []
    open_group: set[int] = set()
    found = []
    for second in (False, True):
        for line in body:
            m = INSTRUCTION.search(line)
            if not m:
                continue
            opcode, operands = m.group(1), [o.strip() for o in m.group(2).split(",")]
            if opcode.startswith(("HGMMA", "IGMMA", "QGMMA")):
                a = re.fullmatch(r"R(\d+)", operands[1])
                if a:
                    open_group |= set(range(int(a.group(1)), int(a.group(1)) + A_REGISTERS))
                if "gsb0" in operands:
                    in_flight.append(open_group)
                    open_group = set()
                continue
            if opcode.startswith("WARPGROUP.DEPBAR"):
                del in_flight[:max(0, len(in_flight) - int(operands[-1], 16))]
                continue
            hit = sorted(set(destinations(opcode, operands[0])) & set().union(*in_flight))
            if hit and second:
                found.append((line.strip(), hit, len(in_flight)))
    return found


def listing_early_writes(sass: str) -> list[tuple[str, list[int], int]]:
    """``early_writes`` of every loop of a SASS listing."""
    return [w for body in loops(sass) for w in early_writes(body)]


def disassemble(cubin: bytes) -> str:
    """The SASS listing of a cubin, by the nvdisasm that Triton bundles."""
    from triton import knobs

    tool = knobs.nvidia.nvdisasm.path
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        try:
            return subprocess.run([tool, "-c", f.name], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError) as err:
            raise RuntimeError(f"cannot read a build's SASS to check its wgmmas ({tool}: {err}); "
                               "SPECBENCH_WGMMA_GUARD=0 runs the kernels unchecked") from err


def _ptxas() -> str:
    from specbench.runner.environment import ptxas_version

    return ptxas_version() or "unknown"


def _verdict(compiled) -> str | None:
    """None if the build has no early writes, else a summary of them; read from Triton's cache when it has one."""
    from triton.runtime.cache import get_cache_manager

    cache = get_cache_manager(compiled.hash)
    kept = cache.get_file(VERDICT_FILE)
    if kept is not None:
        with open(kept) as f:
            text = f.read()
        return None if text == "safe" else text
    writes = listing_early_writes(disassemble(compiled.asm["cubin"]))
    text = f"{len(writes)} writes, the first: {writes[0][0]}" if writes else None
    try:
        cache.put(text or "safe", VERDICT_FILE, binary=False)
    except OSError:  # a read-only cache: the verdict stays in this process
        pass
    return text


def check(compiled, what: Callable[[], str]) -> None:
    """Raise ``UnsafeBuildError`` if ``compiled`` (what a Triton launch returned; ``what()`` names the kernel and
    config) writes registers of wgmmas in flight. Builds without a cubin (the interpreter) pass."""
    if id(compiled) in _safe or not ENABLED or compiled is None or "cubin" not in getattr(compiled, "asm", {}):
        return
    if compiled.hash not in _checked:
        _checked[compiled.hash] = _verdict(compiled)
    found = _checked[compiled.hash]
    if not found:
        _safe.add(id(compiled))  # Triton keeps its compiled kernels for the process's life: ids are not reused
    else:
        raise UnsafeBuildError(
            f"{what()}: this build (Triton's ptxas {_ptxas()}) writes the registers of wgmmas still in flight "
            f"({found}), so its results would depend on timing. Use ptxas 13.3 or later (TRITON_PTXAS_PATH, e.g. "
            "the nvidia-cuda-nvcc wheel's nvidia/cu13/bin/ptxas) or another quant.backend; SPECBENCH_WGMMA_GUARD=0 "
            "runs it anyway (docs/quantization.md)")
