"""``benchmarks/same_run.sh``: each side's run uses its own tree's code, in turns, with its own output folder."""

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "same_run.sh"
PROBE = ("import sys, pathlib, probe_pkg; out = pathlib.Path(sys.argv[2]); out.mkdir(); "
         "(out / 'tree').write_text(probe_pkg.TREE)")  # the script appends --out DIR: argv [-c, --out, DIR]


def test_each_side_runs_its_own_tree_in_turns(tmp_path):
    for tree in ("checkout", "checkout/base"):
        (tmp_path / tree / "probe_pkg").mkdir(parents=True)
        (tmp_path / tree / "probe_pkg" / "__init__.py").write_text(f"TREE = {tree.split('/')[-1]!r}\n")
    env = {**os.environ, "OUT": str(tmp_path / "out"), "ROUNDS": "2",
           "PYTHONPATH": str(tmp_path / "checkout")}  # as benchmarks/device_env.sh leaves it: the checkout on the path
    (tmp_path / "out").mkdir()
    done = subprocess.run(["bash", str(SCRIPT), "probe", sys.executable, "-c", PROBE], cwd=tmp_path / "checkout",
                          env=env, capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert [line.split(" rc ")[0] for line in lines] == ["probe new1", "probe old1", "probe new2", "probe old2"]
    assert all(" rc 0 " in line for line in lines), done.stdout
    for side, tree in (("new", "checkout"), ("old", "base")):
        for r in (1, 2):
            assert (tmp_path / "out" / f"probe_{side}{r}" / "tree").read_text() == tree
            assert (tmp_path / "out" / f"probe_{side}{r}.log").exists()
