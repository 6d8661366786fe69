"""specbench's Triton kernels for int8 activations: W8A8 int8 and W4A8, ``y = x_q @ W_q.T * s_x[m] * s_w[n]``.

Inputs: ``xq`` int8 [M, K] and ``sx`` float32 [M] from ``act_quant_kernel.quantize_per_token`` (``matmul`` runs
both). Weights are K-contiguous per output channel (the K-major operand int8 MMAs want): 8-bit codes int8 [N, K];
4-bit codes uint8 [N, K/2] in chunks of 32 inputs, byte p of chunk c holding input 32c + p in its low nibble and
32c + 16 + p in its high one, two's complement (``backends.triton_a8.pack_nibbles``). ``ws`` float32 [N] is the
per-channel scale (the QQQ channel scale for grouped 4-bit weights; / 16 for 4 bits); grouped 4-bit weights add
group scales ``gs`` [G, N]: QQQ's integers in [1, 16] as uint8, other scales as float16 where exact, else float32.

Products are exact int8 x int8 sums in int32, each 4-bit code moved to the top of a byte (16 x code: one shift or
mask per four bytes and no offset; the 1/16 is in ``ws``). Per-channel weights accumulate int32 over all of K and
scale once; grouped ones scale each int32 partial of one group's inputs by its group scale into a float32 accumulator
(a K tile within one group, or in the dot path also a tile of several groups, one dot per group). With
``A8Config.scaled`` the dot path puts QQQ's integer group scales into the codes instead (``SCALED``): code x scale is
an int8 in [-128, 112], formed in registers ((code + 8) x scale + 128 - 8 x scale stays in [0, 240] in each byte, so
one 32-bit multiply-add takes four bytes, and an xor with 0x80 makes them signed), and a K tile of several groups
takes one dot into one int32 accumulator as per-channel ones do; the tile's group scales are loaded a K step ahead.
Two paths (``A8Config.path``):
- ``gemv`` (M = 1): the weights read as int32 words, four int8 products per ``dp4a`` (a 4-bit word's low nibbles
  against the activation word of the same four chunk positions, its high ones against the word 16 inputs on) into a
  [BN, words] accumulator, scaled per group and reduced once at the end; the next tile's loads are issued before
  this one's products;
- ``dot`` (any M): ``tl.dot`` of the int8 weight tile [BN, BK] with the transposed activation tile [BK, BM]
  (output channels on the MMA's M side, so BM = 16 tokens still fills it; int8 tensor cores); 4 bits: the low- and
  high-nibble tiles joined back into input order, so one dot (and one wgmma wait: the weight is the register
  operand) per tile or per group of it; with 16-input halves per byte the join moves no data: each thread's low
  nibbles are its fragment's inputs 4q..4q + 3 of a 32-input chunk and its high ones 4q + 16..4q + 19.
Both split K (``splitk``: equal ranges, or ``uneven`` ones) with ``splitk.store_tile``. Inline PTX (``dp4a``, the
nibble moves) has a byte-wise fallback for Triton's CPU interpreter (``ASM``). With ``PDL`` (``act_quant_kernel``)
the kernel is launched while the activation-quant kernel still runs and waits for its codes after the first weight
tile's loads (gemv) or at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specbench import wgmma_guard
from specbench.quantization import splitk
from specbench.quantization.act_quant_kernel import quantize_per_token
from specbench.quantization.pdl import INTERPRETED, PDL, launch_options
from specbench.quantization.splitk import TileConfig

try:
    import triton
    import triton.language as tl
except ImportError:  # the optional GPU extra; the CPU tests run it through Triton's interpreter
    triton = None
else:
    from specbench.quantization.splitk import k_range, store_tile

    if PDL:
        from specbench.quantization.pdl import gdc_wait


MAX_K = (2**31 - 1) // (127 * 128)  # int32 sums of |x_q| <= 127 times |code| <= 128 (8 bits, or 16 x 4-bit codes)


@dataclass(frozen=True)
class A8Config(TileConfig):
    """A launch config of this kernel (its fields: ``splitk.TileConfig``, and ``scaled``)."""

    scaled: bool = False  # grouped 4-bit weights, dot path: codes times QQQ's integer group scales in registers and
    # one int32 sum over K (``SCALED``); a weight whose group scales are not such integers is scaled per group in float


def check_shape(n: int, k: int, group: int, bits: int, cfg: A8Config) -> str | None:
    """Why ``cfg`` cannot run an [N, K] ``bits``-bit weight with this group size (a constraint named), or None."""
    if bits == 4 and (k % 32 or cfg.BK % 32):
        return (f"in_features {k} and BK={cfg.BK} must be multiples of 32 (4-bit codes are packed in chunks of 32 "
                "inputs)")
    if k % group:
        return f"in_features {k} must be a multiple of the group size {group}"
    if k > MAX_K:
        return f"in_features {k} is too large for exact int32 sums of int8 products (at most {MAX_K})"
    if any(b & (b - 1) for b in (cfg.BN, cfg.BK, cfg.BM)):
        return f"BN={cfg.BN}, BK={cfg.BK} and BM={cfg.BM} must be powers of two"
    reason = splitk.check_split(k, cfg.BK, cfg)
    if reason:
        return reason
    if group != k and group % cfg.BK:
        if cfg.path == "gemv":
            return f"BK={cfg.BK} must divide the group size {group} (one group scale per tile)"
        if cfg.BK % group:
            return f"BK={cfg.BK} must divide the group size {group} or be a multiple of it (one dot per group)"
    if cfg.path == "dot" and (cfg.BM < 16 or cfg.BN < 16 or cfg.BK < 32):
        return f"tl.dot on int8 needs BM, BN >= 16 and BK >= 32 (got BM={cfg.BM}, BN={cfg.BN}, BK={cfg.BK})"
    if cfg.scaled and (bits != 4 or group == k or cfg.path != "dot"):
        return "scaled=True (codes times integer group scales) needs grouped 4-bit weights on the dot path"
    if cfg.path == "gemv" and cfg.BK * bits < 32:
        return f"BK={cfg.BK} must hold at least one 32-bit word of weights ({32 // bits} inputs)"
    return None


def sub_tile(k: int, group: int, bk: int) -> int:
    """The inputs of one dot and one group scale in a dot-path K tile of ``bk``: the group where a tile of a
    grouped weight spans several groups, else the whole tile."""
    return group if group != k and bk > group else bk


def kernel_constants(k: int, group: int, bits: int, cfg: A8Config, integer_scales: bool = False,
                     deferred: bool = False) -> dict:
    """``a8_kernel``'s compile-time arguments for a [*, K] weight of this group size and ``cfg`` (all but ``ASM`` and
    ``PDL``, which depend on where it runs); ``integer_scales``: the group scales are QQQ's integers in [1, 16] (uint8
    ``gs``), which ``cfg.scaled`` multiplies into the codes; ``deferred``: split-K partials left to the caller."""
    scaled = cfg.scaled and integer_scales
    return dict(BITS=bits, GROUP=cfg.BK if group == k else group, CHANNEL=group == k,
                SPLIT_K=splitk.store_mode(cfg.split, deferred),
                GEMV=cfg.path == "gemv", BM=1 if cfg.path == "gemv" else cfg.BM, BN=cfg.BN, BK=cfg.BK,
                SUB=cfg.BK if scaled else sub_tile(k, group, cfg.BK), UNEVEN=bool(cfg.uneven), SCALED=scaled)


if triton is not None:

    @triton.jit
    def _dp4a(a, b, c, ASM: tl.constexpr):
        """c + the dot product of the four signed bytes of int32 ``a`` and ``b`` (PTX ``dp4a``; byte by byte
        where inline PTX cannot run, e.g. in the interpreter)."""
        if ASM:
            return tl.inline_asm_elementwise("dp4a.s32.s32 $0, $1, $2, $3;", "=r,r,r,r", [a, b, c],
                                             dtype=tl.int32, is_pure=True, pack=1)
        else:
            for i in tl.static_range(4):
                c += ((a << (24 - 8 * i)) >> 24) * ((b << (24 - 8 * i)) >> 24)
            return c

    HIGH_NIBBLES = tl.constexpr(-252645136)  # 0xF0F0F0F0 as int32

    @triton.jit
    def _top_nibbles(b, LOW: tl.constexpr, ASM: tl.constexpr):
        """uint8 ``b`` -> int8 16 x its low (``LOW``) or high nibble as a signed code, four bytes per 32-bit op."""
        if ASM and LOW:
            return tl.inline_asm_elementwise("{ .reg .b32 t; shl.b32 t, $1, 4; and.b32 $0, t, 0xF0F0F0F0; }", "=r,r",
                                             [b], dtype=tl.int8, is_pure=True, pack=4)
        elif ASM:
            return tl.inline_asm_elementwise("and.b32 $0, $1, 0xF0F0F0F0;", "=r,r", [b], dtype=tl.int8, is_pure=True,
                                             pack=4)
        else:
            return ((b << 4) & 0xF0 if LOW else b & 0xF0).to(tl.int8, bitcast=True)

    @triton.jit
    def _scaled_nibbles(b, s, c, LOW: tl.constexpr, ASM: tl.constexpr):
        """uint8 ``b`` -> int8 its low (``LOW``) or high nibble's signed code times the integer scale ``s`` in [1, 16]
        (int32, one per row; ``c`` = (128 - 8 s) x 0x01010101): (nibble ^ 8) x s + c per byte, then ^ 0x80."""
        if ASM:
            shift: tl.constexpr = "" if LOW else "shr.b32 u, u, 4; "
            return tl.inline_asm_elementwise(
                "{ .reg .b32 u; mov.b32 u, $1; " + shift + "and.b32 u, u, 0x0F0F0F0F; xor.b32 u, u, 0x08080808; "
                "mad.lo.u32 u, u, $2, $6; xor.b32 $0, u, 0x80808080; }",
                "=r,r,r,r,r,r,r,r,r,r", [b, s, c], dtype=tl.int8, is_pure=True, pack=4)
        else:
            code = ((b << 4) & 0xF0 if LOW else b & 0xF0).to(tl.int8, bitcast=True) >> 4
            return (code.to(tl.int32) * s).to(tl.int8)

    @triton.jit
    def _add_tile(part, acc, accf, gs_ptr, k0, N, cols, col_ok, GROUP: tl.constexpr, CHANNEL: tl.constexpr):
        """(int32, float32) accumulators after a tile's int32 products ``part``: per-channel weights keep the int32
        sum (``part`` already includes ``acc``), grouped ones add ``part`` times the tile's group scale."""
        if CHANNEL:
            acc = part
        else:
            g = tl.load(gs_ptr + (k0 // GROUP) * N + cols, mask=col_ok, other=0.0).to(tl.float32)
            accf += g[:, None] * part.to(tl.float32)
        return acc, accf

    @triton.jit
    def _gemv_weights(w_rows, k0, k_end, col_ok, BITS: tl.constexpr):
        """The weight words of the tile at input k0; nothing is read past ``k_end`` or N (what is masked off is never
        used, so it is not zeroed)."""
        ok = (col_ok & (k0 + 0 * col_ok.to(tl.int32) < k_end))[:, None]  # tensor & tensor: bool in the interpreter
        return tl.load(w_rows + k0 * BITS // 32, mask=ok, eviction_policy="evict_first")

    @triton.jit
    def _gemv_acts(x_rows, k0, k_end, col_ok, BITS: tl.constexpr):
        """The activation words of the tile at input k0 (4 bits: those of the low nibbles, and those 16 inputs on,
        of the high ones)."""
        ok = (col_ok & (k0 + 0 * col_ok.to(tl.int32) < k_end))[:, None]
        xa = tl.load(x_rows + k0 // 4, mask=ok)
        if BITS == 8:
            xb = xa
        else:
            xb = tl.load(x_rows + k0 // 4 + 4, mask=ok)
        return xa, xb

    @triton.jit(do_not_specialize=["M"])
    def a8_kernel(xq_ptr, sx_ptr, w_ptr, ws_ptr, gs_ptr, y_ptr, part_ptr, count_ptr, M, N, K, stride_wn, stride_ym,
                  BITS: tl.constexpr, GROUP: tl.constexpr, CHANNEL: tl.constexpr, SPLIT_K: tl.constexpr,
                  GEMV: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SUB: tl.constexpr,
                  ASM: tl.constexpr, PDL: tl.constexpr, UNEVEN: tl.constexpr, SCALED: tl.constexpr):
        pid_n, pid_m = tl.program_id(0), tl.program_id(1)
        cols = pid_n * BN + tl.arange(0, BN)
        col_ok = cols < N
        rows = pid_m * BM + tl.arange(0, BM)
        row_ok = rows < M
        k_begin, k_len = k_range(K, BK, BK, UNEVEN)  # check_shape: whole BK tiles
        k_end = k_begin + k_len
        if PDL and not GEMV:  # launched while the activation-quant kernel may still run: wait for its codes
            gdc_wait()
        if GEMV:  # int32 words: weights [N, K * BITS / 32], activations [K / 4]
            W: tl.constexpr = BK * BITS // 32
            j = tl.arange(0, W)
            w_rows = w_ptr + cols[:, None].to(tl.int64) * stride_wn + j[None, :]
            # 4 bits: weight word j is chunk j // 4's bytes 4 (j % 4) ... + 3, its low nibbles inputs 32 (j // 4) +
            # 4 (j % 4) ... + 3, i.e. activation word 8 (j // 4) + j % 4 (``_gemv_acts`` adds 4 for the high ones)
            xw = j if BITS == 8 else 8 * (j // 4) + j % 4
            x_rows = xq_ptr + xw[None, :] + 0 * cols[:, None]  # loaded per weight row (cached): the tile's layout
            acc = tl.zeros((BN, W), dtype=tl.int32)
            accf = tl.zeros((BN, W), dtype=tl.float32)
            w_next = _gemv_weights(w_rows, k_begin, k_end, col_ok, BITS)
            if PDL:  # the first weight tile streams in while the activation-quant kernel finishes
                gdc_wait()
            xa_next, xb_next = _gemv_acts(x_rows, k_begin, k_end, col_ok, BITS)
            for k0 in range(k_begin, k_end, BK):  # the next tile's loads are issued before this one's products
                w, xa, xb = w_next, xa_next, xb_next
                w_next = _gemv_weights(w_rows, k0 + BK, k_end, col_ok, BITS)
                xa_next, xb_next = _gemv_acts(x_rows, k0 + BK, k_end, col_ok, BITS)
                part = acc if CHANNEL else tl.zeros_like(acc)
                if BITS == 8:
                    part = _dp4a(w, xa, part, ASM)
                else:  # each nibble moved to its byte's top (x 16): the low ones against xa, the high against xb
                    part = _dp4a((w << 4) & HIGH_NIBBLES, xa, part, ASM)
                    part = _dp4a(w & HIGH_NIBBLES, xb, part, ASM)
                acc, accf = _add_tile(part, acc, accf, gs_ptr, k0, N, cols, col_ok, GROUP, CHANNEL)
            out = tl.sum(acc.to(tl.float32) if CHANNEL else accf, axis=1)[None, :]
        else:  # bytes: weights [N, K * BITS / 8], activations [M, K]; a dot per SUB inputs (``sub_tile``)
            KB: tl.constexpr = SUB * BITS // 8
            w_rows = w_ptr + cols[:, None].to(tl.int64) * stride_wn + tl.arange(0, KB)[None, :]
            x_rows = xq_ptr + rows[:, None].to(tl.int64) * K + tl.arange(0, SUB)[None, :]
            acc = tl.zeros((BN, BM), dtype=tl.int32)
            accf = tl.zeros((BN, BM), dtype=tl.float32)
            if SCALED:  # one dot a K tile (SUB = BK); the scales of its groups [BN, NG], loaded a K step ahead
                NG: tl.constexpr = BK // GROUP if BK > GROUP else 1
                s_rows = gs_ptr + tl.arange(0, NG)[None, :] * N + cols[:, None]
                s_next = tl.load(s_rows + (k_begin // GROUP) * N, mask=col_ok[:, None], other=0)
            for k0 in range(k_begin, k_end, BK):
                if SCALED:
                    s_tile = s_next.to(tl.int32)
                    more = (k0 + BK + 0 * col_ok.to(tl.int32)) < k_end  # tensor & tensor: bool in the interpreter
                    s_next = tl.load(s_rows + ((k0 + BK) // GROUP) * N, mask=(col_ok & more)[:, None], other=0)
                for s in tl.static_range(BK // SUB):
                    ks = k0 + s * SUB
                    b = tl.load(w_rows + ks * BITS // 8, mask=col_ok[:, None], other=0, eviction_policy="evict_first")
                    xt = tl.load(x_rows + ks, mask=row_ok[:, None], other=0)
                    part = acc if CHANNEL or SCALED else tl.zeros_like(acc)
                    if SCALED:  # codes times their group's integer scale, the tile viewed as [BN, NG, group bytes]
                        b = tl.reshape(b, (BN, NG, KB // NG))
                        sg = s_tile[:, :, None]
                        cg = (128 - 8 * sg) * 0x01010101
                        lo = tl.reshape(_scaled_nibbles(b, sg, cg, True, ASM), (BN, KB // 16, 16))
                        hi = tl.reshape(_scaled_nibbles(b, sg, cg, False, ASM), (BN, KB // 16, 16))
                    elif BITS == 4:
                        lo = tl.reshape(_top_nibbles(b, True, ASM), (BN, KB // 16, 16))
                        hi = tl.reshape(_top_nibbles(b, False, ASM), (BN, KB // 16, 16))
                    if BITS == 4:  # the nibble tiles back in input order: per 32 inputs, 16 low ones then 16 high
                        b = tl.reshape(tl.permute(tl.join(lo, hi), (0, 1, 3, 2)), (BN, SUB))
                    part = tl.dot(b, tl.trans(xt), part, out_dtype=tl.int32)
                    acc, accf = _add_tile(part, acc, accf, gs_ptr, ks, N, cols, col_ok, GROUP, CHANNEL or SCALED)
            if SCALED:  # codes times their group scale, not 16 x codes (``ws`` has the 1/16)
                out = tl.trans(acc.to(tl.float32) * 16.0)
            else:
                out = tl.trans(acc.to(tl.float32) if CHANNEL else accf)
        ws = tl.load(ws_ptr + cols, mask=col_ok, other=0.0)
        sx = tl.load(sx_ptr + rows, mask=row_ok, other=0.0)
        store_tile(out * ws[None, :] * sx[:, None], y_ptr, part_ptr, count_ptr, rows, cols, M, N, stride_ym, SPLIT_K)


def matmul(x: torch.Tensor, weight: torch.Tensor, ws: torch.Tensor, gs: torch.Tensor | None, counters: torch.Tensor,
           bits: int, group: int, cfg: A8Config, deferred: bool = False) -> torch.Tensor:
    """``x`` [M, K] (16/32-bit) quantized per token, times the packed weight -> [M, N] in ``x.dtype`` (``launch``'s
    ``deferred``: the float32 partial sums)."""
    xq, sx = quantize_per_token(x)
    return launch(xq, sx, weight, ws, gs, counters, bits, group, cfg, x.dtype, deferred)


def launch(xq: torch.Tensor, sx: torch.Tensor, weight: torch.Tensor, ws: torch.Tensor, gs: torch.Tensor | None,
           counters: torch.Tensor, bits: int, group: int, cfg: A8Config, dtype: torch.dtype,
           deferred: bool = False) -> torch.Tensor:
    """``xq`` [M, K] int8 with per-row scales ``sx`` times the packed [N, K] weight -> [M, N] in ``dtype``;
    ``counters`` int32 zeros (>= the ``splitk.tile_counters`` slots when ``cfg.split`` > 1) are left zero again.
    ``deferred`` with ``cfg.split`` > 1: the float32 partial sums [split, M, N] instead, for the caller to add."""
    m, k = xq.shape
    n = weight.shape[0]
    if cfg.path == "gemv" and m != 1:
        raise ValueError(f"the gemv path takes one row, not M={m}")
    reason = check_shape(n, k, group, bits, cfg)
    if reason:
        raise ValueError(reason)
    y, part = splitk.outputs(m, n, dtype, xq.device, cfg.split, cfg.BN, splitk.tile_rows(cfg), counters, deferred)
    if m == 0:
        return y
    if cfg.path == "gemv":  # the gemv path reads int32 words
        xq, weight = xq.view(torch.int32), weight.view(torch.int32)
    compiled = a8_kernel[splitk.grid(n, m, cfg)](
        xq, sx, weight, ws, ws if gs is None else gs, y, part, counters, m, n, k, weight.stride(0), y.stride(-2),
        **kernel_constants(k, group, bits, cfg, gs is not None and gs.dtype == torch.uint8, deferred),
        ASM=not INTERPRETED, PDL=PDL, num_warps=cfg.warps, num_stages=cfg.stages, **launch_options(),
    )
    wgmma_guard.check(compiled, lambda: f"the Triton {'W8A8' if bits == 8 else 'W4A8'} kernel with {cfg} on "
                                        f"[{n}, {k}], group {group}")
    return y
