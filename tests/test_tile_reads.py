"""``benchmarks.bench_tile_reads``' read-only kernel loads exactly the tiles its grid's programs own."""

from tests.conftest import run_in_interpreter


def test_tile_reads_matches_the_reference_in_the_interpreter():
    assert run_in_interpreter("from benchmarks.bench_tile_reads import smoke; smoke()") == \
        "tile_reads matches the reference (interpreter)"


def test_table_traffic_counts_each_n_tiles_activation_reads():
    from benchmarks.bench_tile_reads import table_traffic

    rows = table_traffic("h200", ["w4a16", "w4a8"], [64])
    assert rows and {r["scheme"] for r in rows} == {"w4a16", "w4a8"} and {r["M"] for r in rows} == {64}
    assert all(r["group"] in ("channel", "g128") for r in rows)  # zero-point entries left out
    gate_up = next(r for r in rows if r["scheme"] == "w4a16" and r["weight"] == "57344x8192" and r["group"] == "g128")
    assert gate_up["weight_MB"] == 57344 * 8192 / 2 / 1e6
    assert gate_up["x_L2_MB"] == -(-57344 // gate_up["BN"]) * 64 * 8192 * 2 / 1e6  # bf16 rows, once per N tile
    w4a8 = next(r for r in rows if r["scheme"] == "w4a8" and r["weight"] == "57344x8192" and r["group"] == "g128")
    assert w4a8["x_L2_MB"] == -(-57344 // w4a8["BN"]) * 64 * 8192 / 1e6  # int8 rows
    assert abs(w4a8["TBps"] - (w4a8["weight_MB"] + w4a8["x_L2_MB"]) / w4a8["us"]) < 1e-9  # MB / µs = TB/s


def test_stack_totals_sum_a_layers_linears_times_the_layer_count():
    from benchmarks.bench_tile_reads import stack_totals

    row = dict(model="m", layers=32, scheme="w4a16", M=32)
    shapes = (("qkv", 4096), ("o", 4096), ("gate_up", 4096), ("down", 14336))
    rows = [{**row, "layer": name, "k": k, "group": k if per_channel else 128, "kernel_us": 10.0 + i, "reads_us": 8.0,
             "reads_mma_us": 9.0} for per_channel in (False, True) for i, (name, k) in enumerate(shapes)]
    rows.append({**row, "M": 64, "layer": "qkv", "k": 4096, "group": 128, "kernel_us": 1.0, "reads_us": 1.0,
                 "reads_mma_us": 1.0})
    grouped, channel = stack_totals(rows)  # M = 64 has one linear of four: no stack
    assert (grouped["group"], channel["group"]) == ("g128", "channel")
    assert grouped["M"] == 32 and grouped["linears"] == channel["linears"] == 4
    assert abs(grouped["kernel_ms"] - (10 + 11 + 12 + 13) * 32 / 1e3) < 1e-12
    assert abs(channel["reads_mma_ms"] - 4 * 9.0 * 32 / 1e3) < 1e-12


def test_markdown_rows_fill_every_column_of_the_header():
    from benchmarks.bench_tile_reads import markdown

    times = ("kernel", "kernel_l2", "launch", "reads", "weight_only", "x_only", "reads_2bn", "reads_mma")
    row = {"scheme": "w4a16", "model": "m", "layer": "o", "n": 4096, "k": 4096, "M": 1, "x_L2_MB": 0.5,
           "weight_MB": 8.4, "config": {"BN": 16, "BK": 1024, "split": 1},
           **{f"{name}_us": float(i + 2) for i, name in enumerate(times)}}
    header, rule, line = markdown([row]).splitlines()
    assert header.count("|") == rule.count("|") == line.count("|")
    cells = dict(zip((c.strip() for c in header.split("|")), (c.strip() for c in line.split("|"))))
    assert (cells["kernel µs"], cells["one copy (L2)"], cells["empty grid"], cells["reads µs"]) == \
        ("2.0", "3.0", "4.0", "5.0")
