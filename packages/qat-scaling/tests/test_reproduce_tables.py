"""The reproduce report's tables on planted run records (no training)."""

import pytest
from qat_scaling.reproduce import _decomposition_table, _delta_table, _summary
from qat_scaling.scaling_law import qat_error

PLANTED = {"W4A4": 0.004, "W4A16": 0.003, "W16A4": 0.002, "W16A4-FC2A8": 0.001}


def _records():
    out = []
    for size, n in (("s32", 20640), ("s64", 82240)):
        for d in (1000, 2000):
            out.append({"run": f"{size}-FP", "size": size, "N": n, "D": d, "scheme": "FP",
                        "G": 0, "seed": 0, "val_loss": 4.0})  # fmt: skip
            for scheme, delta in PLANTED.items():
                out.append({"run": f"{size}-{scheme}", "size": size, "N": n, "D": d,
                            "scheme": scheme, "G": 32, "seed": 0, "val_loss": 4.0 + delta})  # fmt: skip
    return out


def test_decomposition_table_pairs_parts_and_ratios():
    errors = qat_error(_records())
    table = _decomposition_table(errors, 32)
    assert len(table.rows) == 4
    assert "d_A FC2-Hadamard" not in table.columns  # not run: no empty column
    for row in table.rows:
        assert row["d W4A4"] == pytest.approx(0.004)
        assert row["d_W + d_A"] == pytest.approx(0.005)
        assert row["d_W / d_A"] == pytest.approx(1.5)
        assert row["d_W / d_A FC2-A8"] == pytest.approx(3.0)
    assert _decomposition_table(errors, 8) is None  # nothing ran at G = 8


def test_delta_table_and_summary_report_the_fc2_cut():
    from icml26_shared.results import Report

    records = _records()
    errors = qat_error(records)
    spec = type("Spec", (), {})()
    table = _delta_table(records, errors, spec, 0)
    assert [r["L_FP"] for r in table.rows] == [4.0] * 4
    assert table.rows[0]["W16A4-FC2A8 G=32"] == pytest.approx(0.001)
    report = Report("qat-scaling", ".")
    _summary(report, records, errors, {}, 0)
    assert "W16A4-FC2A8 G=32 0.0010 vs W16A4 0.0020 (-50%)" in report.notes[-1]
