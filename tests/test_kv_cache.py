"""The KV cache's one-kernel write: the same cache as the indexed store, under Triton's interpreter and on a GPU."""

import textwrap

import pytest
import torch

from tests.conftest import run_in_interpreter

# kv heads, new tokens, head dim; k contiguous, or with ``rope`` (rotated by the kernel) a transposed view of a q/k/v
# projection as the layer passes it, and v such a view
CASES = textwrap.dedent("""
    import torch
    from specbench.model import kv_cache, rope as rope_mod
    torch.manual_seed(0)

    def both(heads, n, d, layers, device, cache_dtype, dtype, rope=False):
        caches = [kv_cache.StaticKVCache(layers, heads, d, 40, cache_dtype, device) for _ in range(2)]
        caches[0].kv.normal_()
        caches[1].kv.copy_(caches[0].kv)
        slots = torch.randperm(40, device=device)[:n]
        qkv = torch.randn(1, n, 3 * heads, d, device=device, dtype=dtype)
        k = qkv[:, :, :heads].transpose(1, 2) if rope else torch.randn(1, heads, n, d, device=device, dtype=dtype)
        v = qkv[:, :, heads:2 * heads].transpose(1, 2)
        tables = rope_mod.rope_tables(1.0 / 10000 ** (torch.arange(0, d, 2, device=device) / d),
                                      torch.randint(0, 500, (n,), device=device), dtype)
        stored = rope_mod.apply_rope(k.float(), *(t.float() for t in tables)) if rope else k
        layer = layers - 1
        where = (caches[0].kv_index, caches[0].layer_index[layer:layer + 1], slice(None), slice(None), slots)
        caches[0].kv[where] = torch.stack([stored.to(dtype), v]).permute(0, 3, 1, 2, 4).to(cache_dtype)
        assert kv_cache.fits(k, v)
        kv_cache.store_rows(caches[1].kv[:, layer], slots, k, v, tables if rope else None)
        if rope:  # float32 math, rounded once; the kernel may fuse a multiply-add
            torch.testing.assert_close(caches[1].kv.float(), caches[0].kv.float(), rtol=1e-2, atol=1e-2)
            return (caches[1].kv != caches[0].kv).float().mean().item() < 0.01
        return torch.equal(caches[0].kv, caches[1].kv)
""")
INTERPRETED = CASES + textwrap.dedent("""
    for heads, n, d in [(2, 1, 16), (3, 5, 32), (8, 7, 64)]:
        assert both(heads, n, d, 2, "cpu", torch.float16, torch.float16), (heads, n, d)
        assert both(heads, n, d, 2, "cpu", torch.float16, torch.float16, rope=True), (heads, n, d)
    assert both(4, 3, 16, 3, "cpu", torch.float16, torch.float32)  # k/v cast to the cache's dtype
    print("ok")
""")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU test; the GPU test compiles the kernel itself")
def test_store_rows_equals_the_indexed_store_in_the_interpreter():
    assert run_in_interpreter(INTERPRETED) == "ok"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_store_rows_equals_the_indexed_store_on_the_gpu():
    pytest.importorskip("triton")
    scope = {}
    exec(CASES, scope)
    for heads, n, d in [(8, 1, 128), (8, 31, 128), (3, 9, 64), (1, 40, 256)]:
        for rope in (False, True):
            assert scope["both"](heads, n, d, 4, "cuda", torch.bfloat16, torch.bfloat16, rope), (heads, n, d, rope)


def test_fits_refuses_strided_head_dims_and_odd_sizes():
    from specbench.model import kv_cache

    k = torch.zeros(1, 2, 3, 64)
    assert kv_cache.fits(k, k)
    assert not kv_cache.fits(k, torch.zeros(1, 2, 3, 128)[..., ::2])  # head dim strided
    assert not kv_cache.fits(torch.zeros(1, 2, 3, 96), torch.zeros(1, 2, 3, 96))  # not a power of two
