"""One number formatter for every output (issue 32): no binary noise (41.669999999999995) reaches a
table, CSV or JSON; ints stay ints; None, NaN and infinity print the output's unknown marker."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainmark.format.numbers import display, machine, round_floats, rounded
from trainmark.report.fmt import num, pct, seconds


@pytest.mark.parametrize("noisy, clean", [(41.669999999999995, "41.67"), (28.280450000000002, "28.28045"),
                                          (0.1 + 0.2, "0.3"), (3000.0, "3000"), (-2.5, "-2.5"), (1e-7, "1e-07")])
def test_machine_drops_the_noise(noisy, clean):
    assert machine(noisy) == clean


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_machine_reads_back_as_the_rounded_value(x):
    assert float(machine(x)) == rounded(x)
    assert math.isclose(float(machine(x)), x, rel_tol=1e-11, abs_tol=0)


def test_the_largest_float_stays_finite():
    assert float(machine(1.7976931348623157e308)) == 1.79769313486e308  # rounds down: no overflow to inf


def test_ints_stay_ints_and_unknowns_print_the_marker():
    assert machine(7) == "7" and display(7) == "7" and num(7) == "7"
    for unknown in (None, math.nan, math.inf, -math.inf, "12", True):
        assert machine(unknown) == "" and machine(unknown, unknown="-") == "-"
        assert display(unknown) == "-" and display(unknown, unknown="n/a") == "n/a"
        assert num(unknown) == "-" and seconds(unknown) == "-" and pct(unknown) == "-"


def test_display_for_people():
    assert display(41.669999999999995) == "41.67"
    assert display(28.280450000000002, significant=5) == "28.28"
    assert display(222.879, decimals=2) == "222.88" and display(3, decimals=1) == "3.0"
    assert display(123456.7) == "123457"  # no exponent for ordinary magnitudes
    assert num(0.000123456) == "0.0001235" and seconds(2.25) == "2.2" and pct(0.1234) == "12.3 %"


def test_round_floats_cleans_json_like_data():
    data = {"a": [41.669999999999995, 2, None, "x"], "b": {"c": 28.280450000000002}, "d": math.nan}
    cleaned = round_floats(data)
    assert cleaned["a"] == [41.67, 2, None, "x"] and cleaned["b"] == {"c": 28.28045}
    assert math.isnan(cleaned["d"])  # left for the writer's allow_nan policy to judge
