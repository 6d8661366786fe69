"""One-off (session 24, call 7): tune only narrow (BN < 64) dot candidates against each current entry.

Needs the narrow-tile grid in ``tune.candidates`` (BN 16/32, 1-2 warps, ``DEQ`` 5/8/9; see docs/benchmarks.md,
session 24). As first run it lacked the ``__main__`` guard below: the tune's spawned compile workers re-ran this
script and crashed, so each candidate compiled in the timing process and the budget ended before most of M = 32.
"""
import sys

from specbench.quantization import tune

full = tune.candidates


def narrow(n, k, group, m, also=()):
    c = full(n, k, group, m, also)
    return c[:1] + [x for x in c[1:] if x.path == "dot" and x.BN < 64]


if __name__ == "__main__":
    tune.candidates = narrow
    tune.main(sys.argv[1:])
