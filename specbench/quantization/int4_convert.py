"""int4 -> 16-bit float conversion two values per instruction (CUDA inline PTX), and its plain Triton twin.

A nibble q under a 16-bit float's exponent is an exact float: ``q | 0x4300`` read as bfloat16 is 128 + q, and
``q | 0x6400`` read as float16 is 1024 + q. With two 16-bit halves per 32-bit register, one LOP3 makes two such
values: ``(w & 0x000F000F) | MAGIC`` with MAGIC = 0x43004300 (bf16) or 0x64006400 (fp16).

``planes(packed, zoff, ...)`` takes an int32 tile of packed words (nibble j of a word at bits 4j) and off + z in
16 bits (z the zero point, 8 when symmetric) and returns eight 16-bit tiles of its shape, plane j holding the exact
q - z of nibble j. On CUDA it is one ``inline_asm_elementwise`` over two words A, B at a time (``pack=2``: one
register per output holding A's value in the low half and B's in the high half, and one holding both columns'
off + z): two PRMTs put A's and B's low 16 bits side by side (``wlo``) and their high 16 bits (``whi``), then per
plane a shift by 4 (j mod 4), a LOP3 and a packed subtraction: 16 values in 24 instructions (fp16 with
``ODD_FMA``: 23, two of them shifts), against about three per value unpacking each nibble in its own 32-bit lane.
Triton's interpreter cannot run PTX, so there (and as the reference of the same math) ``ASM=False`` builds the
planes with plain shifts, masks, bitcasts and a subtraction.

``planes(..., SUBTRACT=False)`` is the same without the subtraction: plane j holds the exact off + q (16 values in
16 instructions); the caller takes off + z times the sum of x off the product, in float32.
"""

from __future__ import annotations

MASK = 0x000F000F
LUT = 0xEA  # lop3 truth table of (a & b) | c for a = 0xF0, b = 0xCC, c = 0xAA
MAGIC = {"bf16": 0x43004300, "fp16": 0x64006400}
OFFSET = {"bf16": 128.0, "fp16": 1024.0}
FP16_960, FP16_SIXTEENTH = 0x63806380, 0x2C002C00  # 960 and 1 / 16 in both fp16 halves
SUB = {"bf16": "bf16x2", "fp16": "f16x2"}  # packed subtraction of off + z (sm90 for bf16x2)
SELECT_LO, SELECT_HI = 0x5410, 0x7632  # prmt: [A.b0, A.b1, B.b0, B.b1] and [A.b2, A.b3, B.b2, B.b3]


def pair_asm(kind: str, subtract: bool = True, scale: bool = False, odd_fma: bool = False) -> str:
    """PTX for eight outputs $0..$7 (plane j: q - z) from two packed words $8 (A, low halves) and $9 (B, high
    halves) and the pair $10 of off + z for their two columns; ``subtract=False``: plane j is off + q and there is
    no $10; ``scale``: plane j is (q - z) s, rounded once, with the pair of scales s in $11.

    ``odd_fma`` (fp16 with the subtraction) skips half the shifts: an odd plane keeps its nibble at bits 4-7 of
    each half, which under 0x6400 reads as 1024 + 16 q, and one fma by 1/16 less (64 + z) = off + z - 960 gives
    q - z exactly (2 shifts a word pair, not 6)."""
    magic = MAGIC[kind]
    odd_fma = odd_fma and kind == "fp16" and subtract
    lines = [f"prmt.b32 wlo, $8, $9, {SELECT_LO:#06x};", f"prmt.b32 whi, $8, $9, {SELECT_HI:#06x};"]
    regs = "wlo, whi, wsh"
    if odd_fma:
        regs += ", nz, sixteenth"
        lines += [f"mov.b32 nz, {FP16_960:#010x};", "sub.rn.f16x2 nz, nz, $10;",
                  f"mov.b32 sixteenth, {FP16_SIXTEENTH:#010x};"]
    shifted = None  # (half, shift) now in wsh
    for j in range(8):
        src = "wlo" if j < 4 else "whi"
        in_place = odd_fma and j % 2 == 1  # the nibble read at bits 4-7
        shift = 4 * (j % 4 - in_place)
        if shift:
            if shifted != (src, shift):
                lines.append(f"shr.b32 wsh, {src}, {shift};")
                shifted = (src, shift)
            src = "wsh"
        lines.append(f"lop3.b32 ${j}, {src}, {(MASK << 4 if in_place else MASK):#010x}, {magic:#010x}, {LUT:#04x};")
        if in_place:
            lines.append(f"fma.rn.f16x2 ${j}, ${j}, sixteenth, nz;")
        elif subtract:
            lines.append(f"sub.rn.{SUB[kind]} ${j}, ${j}, $10;")
        if scale:
            lines.append(f"mul.rn.{SUB[kind]} ${j}, ${j}, $11;")
    return "{\n.reg .b32 " + regs + ";\n" + "\n".join(lines) + "\n}"


try:
    import triton
    import triton.language as tl
except ImportError:  # the optional GPU extra
    triton = None

if triton is not None:
    _ASM_BF16 = tl.constexpr(pair_asm("bf16"))
    _ASM_FP16 = tl.constexpr(pair_asm("fp16"))
    _CONSTRAINTS = tl.constexpr("=r," * 8 + "r,r,r")
    _ASM_BF16_OFF = tl.constexpr(pair_asm("bf16", subtract=False))
    _ASM_FP16_OFF = tl.constexpr(pair_asm("fp16", subtract=False))
    _ASM_BF16_SCALED = tl.constexpr(pair_asm("bf16", scale=True))
    _ASM_FP16_SCALED = tl.constexpr(pair_asm("fp16", scale=True))
    _ASM_FP16_ODD = tl.constexpr(pair_asm("fp16", odd_fma=True))
    _ASM_FP16_SCALED_ODD = tl.constexpr(pair_asm("fp16", scale=True, odd_fma=True))
    _CONSTRAINTS_SCALED = tl.constexpr("=r," * 8 + "r,r,r,r")

    @triton.jit
    def _plane(packed, zoff, j: tl.constexpr, sixteen: tl.constexpr):
        if sixteen == tl.bfloat16:
            return (((packed >> (4 * j)) & 0xF) | 0x4300).to(tl.int16).to(tl.bfloat16, bitcast=True) - zoff
        else:
            return (((packed >> (4 * j)) & 0xF) | 0x6400).to(tl.int16).to(tl.float16, bitcast=True) - zoff

    @triton.jit
    def _asm_planes(packed, zoff, asm: tl.constexpr):
        d = zoff.dtype
        return tl.inline_asm_elementwise(asm, _CONSTRAINTS, [packed, zoff], is_pure=True, pack=2,
                                         dtype=(d, d, d, d, d, d, d, d))

    @triton.jit
    def scaled_planes(packed, zoff, scale, sixteen: tl.constexpr, ASM: tl.constexpr, ODD_FMA: tl.constexpr = False):
        """``planes`` times ``scale`` (16 bits, broadcast over ``packed``): plane j = (nibble j - z) s, the
        subtraction exact and the product rounded once, two values per instruction each on CUDA."""
        if ASM:
            d = zoff.dtype
            return tl.inline_asm_elementwise(
                _ASM_BF16_SCALED if sixteen == tl.bfloat16 else (_ASM_FP16_SCALED_ODD if ODD_FMA else _ASM_FP16_SCALED),
                _CONSTRAINTS_SCALED, [packed, zoff, scale], is_pure=True, pack=2, dtype=(d, d, d, d, d, d, d, d))
        else:
            p = planes(packed, zoff, sixteen, ASM)
            return (p[0] * scale, p[1] * scale, p[2] * scale, p[3] * scale, p[4] * scale, p[5] * scale,
                    p[6] * scale, p[7] * scale)

    @triton.jit
    def planes(packed, zoff, sixteen: tl.constexpr, ASM: tl.constexpr, SUBTRACT: tl.constexpr = True,
               ODD_FMA: tl.constexpr = False):
        """Eight tiles of ``packed``'s shape: plane j = nibble j - z, exact (``zoff`` = off + z in 16 bits,
        broadcast over ``packed``; off 128 bf16, 1024 fp16). ``SUBTRACT=False``: plane j = off + nibble j, with
        ``zoff`` 0 (the PTX has no subtraction and leaves ``zoff`` unread). ``ODD_FMA``: fp16's odd planes
        through ``pair_asm``'s fma (the same values, fewer instructions)."""
        if ASM and SUBTRACT:
            return _asm_planes(packed, zoff,
                               _ASM_BF16 if sixteen == tl.bfloat16 else (_ASM_FP16_ODD if ODD_FMA else _ASM_FP16))
        elif ASM:
            return _asm_planes(packed, zoff, _ASM_BF16_OFF if sixteen == tl.bfloat16 else _ASM_FP16_OFF)
        else:
            return (_plane(packed, zoff, 0, sixteen), _plane(packed, zoff, 1, sixteen),
                    _plane(packed, zoff, 2, sixteen), _plane(packed, zoff, 3, sixteen),
                    _plane(packed, zoff, 4, sixteen), _plane(packed, zoff, 5, sixteen),
                    _plane(packed, zoff, 6, sixteen), _plane(packed, zoff, 7, sixteen))
