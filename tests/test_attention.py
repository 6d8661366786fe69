"""The cache-block-skipping attention kernel: SDPA's result under Triton's interpreter, and its dispatch."""

import textwrap

import pytest
import torch
import torch.nn.functional as F

from specbench.model import attention, rope
from tests.conftest import run_in_interpreter

# float16: the interpreter's bfloat16 dot is not exact enough to test against; the GPU test covers bfloat16
INTERPRETED = textwrap.dedent("""
    import torch, torch.nn.functional as F
    from specbench.model import attention, rope
    torch.manual_seed(0)

    chosen = attention.merge_rows
    # heads, kv heads, queries, cache slots, head dim, committed prefix, rows per merge program (None: chosen)
    for h, kvh, n, slots, d, start, width in [(4, 2, 1, 80, 64, 10, None), (8, 2, 3, 130, 64, 60, None),
                                              (4, 4, 17, 200, 128, 100, None), (8, 1, 5, 64, 64, 0, None),
                                              (16, 2, 20, 200, 64, 100, 2), (4, 2, 3, 200, 64, 100, 8)]:
        attention.merge_rows = chosen if width is None else lambda *_, w=width: w
        q = torch.randn(1, n, h + 2 * kvh, d).half()[:, :, :h].transpose(1, 2)  # as the layer passes it
        tables = rope.rope_tables(1.0 / 10000 ** (torch.arange(0, d, 2) / d), torch.randint(0, 300, (n,)),
                                  torch.float16)
        k, v = torch.randn(2, 1, kvh, slots, d).half()
        mask = torch.zeros(1, 1, n, slots, dtype=torch.bool)
        mask[..., :start] = True
        mask[0, 0, :, start:start + n] = (torch.rand(n, n) < 0.4) | torch.eye(n, dtype=torch.bool)
        for rotate in (False, True):
            out = attention.masked_attention(q, k, v, mask, *attention.visible_blocks(mask),
                                             *(tables if rotate else (None, None)))
            query = rope.apply_rope(q.float(), *(t.float() for t in tables)).half() if rotate else q
            ref = F.scaled_dot_product_attention(query.float(), k.float(), v.float(), attn_mask=mask,
                                                 enable_gqa=h != kvh)
            err = ((out.float() - ref).norm() / ref.norm()).item()
            assert out.shape == q.shape and err < 2e-3, (h, kvh, n, slots, d, start, rotate, err)
    print("ok")
""")


# The kernel that stores the forward's K/V first against the cache write followed by the kernel: the same cache and
# output bit for bit. New tokens sit at scattered slots (one that no query sees), the cache holds large values there
# beforehand, and forced split counts give each split its own share, so a split that read a slot before its owner
# stored it would change the output.
STORING = textwrap.dedent("""
    import torch
    from specbench.model import attention, kv_cache, rope
    torch.manual_seed(0)

    def both(h, kvh, n, slots, d, start, splits, rotate, device="cpu", dtype=torch.float16):
        if splits:
            attention.split_count = lambda *_: splits
        qkv = torch.randn(1, n, h + 2 * kvh, d, device=device).to(dtype)
        q, k, v = (t.transpose(1, 2) for t in qkv.split([h, kvh, kvh], dim=2))  # as the layer passes them
        new = (start + torch.randperm(slots - start, device=device)[:n]).sort().values
        mask = torch.zeros(1, 1, n, slots, dtype=torch.bool, device=device)
        mask[..., :start] = True
        seen = (torch.rand(n, n, device=device) < 0.4) | torch.eye(n, dtype=torch.bool, device=device)
        seen[:, -1] = False  # the last new token: a padding row's slot that no query sees
        mask[0, 0, :, new] = seen.tril()
        tables = rope.rope_tables(1.0 / 10000 ** (torch.arange(0, d, 2, device=device) / d),
                                  torch.arange(start, start + n, device=device), dtype) if rotate else None
        caches = [kv_cache.StaticKVCache(2, kvh, d, slots, dtype, device) for _ in range(2)]
        caches[0].kv.normal_()
        caches[0].kv[:, 1, :, :, new] = 1e3
        caches[1].kv.copy_(caches[0].kv)
        prepared = attention.prepare(mask) if device == "cuda" else attention.CacheMask(mask, *attention.visible_blocks(mask))
        cos, sin = tables if rotate else (None, None)
        kv_cache.store_rows(caches[0].kv[:, 1], new, k, v, tables)
        ref = attention.masked_attention(q, *caches[0].layer(1), *prepared, cos, sin)
        out = attention.masked_attention_storing(q, *caches[1].layer(1), *prepared, cos, sin, k, v, new)
        attention.split_count = split_count
        return torch.equal(caches[0].kv, caches[1].kv) and torch.equal(out, ref)

    split_count = attention.split_count
""")
STORING_CASES = textwrap.dedent("""
    # heads, kv heads, new tokens, cache slots, head dim, committed prefix, splits (None: chosen), rotate
    for case in [(4, 2, 1, 80, 64, 10, None, True), (8, 2, 5, 300, 64, 60, 4, True), (16, 2, 20, 400, 64, 30, 8, False),
                 (4, 4, 17, 200, 128, 0, 2, True), (8, 1, 3, 640, 64, 500, 16, True)]:
        assert both(*case), case
    print("ok")
""")


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU test; the GPU test compiles the kernel itself")
def test_kernel_matches_sdpa_in_the_interpreter():
    assert run_in_interpreter(INTERPRETED) == "ok"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU test; the GPU test compiles the kernel itself")
def test_storing_kernel_equals_the_cache_write_then_the_kernel_in_the_interpreter():
    assert run_in_interpreter(STORING + STORING_CASES) == "ok"


@pytest.mark.skipif(not attention.available(), reason="needs a CUDA GPU and triton")
def test_storing_kernel_equals_the_cache_write_then_the_kernel_on_the_gpu():
    scope = {}
    exec(STORING, scope)
    for case in [(32, 8, 1, 2176, 128, 700, None), (32, 8, 31, 2176, 128, 700, None), (64, 8, 8, 4096, 128, 300, None),
                 (32, 8, 60, 2176, 128, 40, 4), (64, 8, 128, 4096, 128, 3000, None)]:
        for rotate in (False, True):
            assert scope["both"](*case, rotate, "cuda", torch.bfloat16), (case, rotate)


def test_visible_blocks_lists_the_attended_blocks_first():
    bn = attention.BLOCK_N
    mask = torch.zeros(1, 1, 2, 4 * bn + 3, dtype=torch.bool)  # five blocks, the last one partial
    mask[0, 0, 0, :5] = True  # block 0
    mask[0, 0, 1, 2 * bn + 7] = True  # block 2
    mask[0, 0, 1, -1] = True  # a padding row's scratch slot: the partial block 4
    order, count = attention.visible_blocks(mask)
    assert count.tolist() == [3] and order.dtype == count.dtype == torch.int32
    assert order.tolist() == [0, 2, 4, 1, 3]


@pytest.mark.skipif(attention.triton is None, reason="needs triton")
def test_the_split_count_fills_the_gpu_with_at_most_one_program_per_cache_block():
    for slots in range(1, 5000, 37):
        blocks = -(-slots // attention.BLOCK_N)
        for kv_heads, row_blocks in ((8, 1), (8, 2), (8, 8), (2, 1)):
            splits = attention.split_count(kv_heads, row_blocks, slots)
            assert splits & (splits - 1) == 0 and 1 <= splits <= min(blocks, 16), (slots, kv_heads, row_blocks, splits)
            assert kv_heads * row_blocks * splits <= 2 * attention.SMS
    assert attention.split_count(8, 1, 576) == 8  # nine blocks: eight programs, not sixteen
    assert attention.split_count(8, 1, 4096) == 16 and attention.split_count(8, 2, 4096) == 8


def test_cpu_and_large_forwards_go_to_sdpa():
    q, k = torch.randn(1, 4, 3, 64, dtype=torch.bfloat16), torch.randn(1, 2, 16, 64, dtype=torch.bfloat16)
    mask = torch.ones(1, 1, 3, 16, dtype=torch.bool)
    assert attention.prepare(mask).order is None and not attention.fits(q, k, attention.prepare(mask))  # CPU
    out = attention.attend(q, k, k, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, k, attn_mask=mask, enable_gqa=True))
    if torch.cuda.is_available():
        gpu = attention.prepare(mask.cuda())
        assert attention.fits(q.cuda(), k.cuda(), gpu)
        many = attention.prepare(torch.ones(1, 1, attention.MAX_QUERIES + 1, 16, dtype=torch.bool, device="cuda"))
        assert many.order is None  # a prefill chunk
        assert not attention.fits(q.float().cuda(), k.float().cuda(), gpu)  # float32


@pytest.mark.skipif(not attention.available(), reason="needs a CUDA GPU and triton")
@pytest.mark.parametrize("n", [1, 7, 60, 128])
def test_kernel_matches_sdpa_on_the_gpu(n):
    torch.manual_seed(n)
    h, kvh, slots, d, start = 32, 8, 2176, 128, 700
    q = torch.randn(1, h, n, d, dtype=torch.bfloat16, device="cuda")
    kv = torch.randn(2, 1, kvh, slots, d, dtype=torch.bfloat16, device="cuda")
    mask = torch.zeros(1, 1, n, slots, dtype=torch.bool, device="cuda")
    mask[..., :start] = True
    mask[0, 0, :, start:start + n] = (torch.rand(n, n, device="cuda") < 0.3) | torch.eye(n, dtype=torch.bool,
                                                                                         device="cuda")
    mask[0, 0, -1, slots - 1] = True  # a padding row on a scratch slot at the cache's end
    tables = rope.rope_tables(1.0 / 500000 ** (torch.arange(0, d, 2, device="cuda") / d),
                              torch.arange(start, start + n, device="cuda"), torch.bfloat16)
    for table in (None, tables):
        out = attention.attend(q, kv[0], kv[1], mask, rope=table)
        query = q if table is None else rope.apply_rope(q.float(), *(t.float() for t in table))
        ref = F.scaled_dot_product_attention(query.float(), kv[0].float(), kv[1].float(), attn_mask=mask,
                                             enable_gqa=True)
        assert ((out.float() - ref).norm() / ref.norm()).item() < 1e-2
