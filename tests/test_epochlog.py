import datetime as dt

import pytest

from trainmark.format import epochlog


def test_line_is_exactly_the_documented_format():
    t = dt.datetime(2026, 11, 30, 14, 2, 7, tzinfo=dt.timezone.utc).timestamp()
    assert epochlog.format_line(t, 3, 12, 0.76214) == "[2026:11:30 14:02:07] \u2013 [3] \u2013 [12] \u2013 [0.7621]"


def test_round_trip():
    t = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc).timestamp()
    parsed = epochlog.parse_line(epochlog.format_line(t, 1, 2, 0.5))
    assert (parsed.trial, parsed.epoch, parsed.metric, parsed.time.timestamp()) == (1, 2, 0.5, t)


@pytest.mark.parametrize("line", [
    "[2026:11:30 14:02:07] - [3] - [12] - [0.7621]",          # hyphen, not en dash
    "[2026-11-30 14:02:07] \u2013 [3] \u2013 [12] \u2013 [0.7621]",  # wrong date separators
    "[2026:13:30 14:02:07] \u2013 [3] \u2013 [12] \u2013 [0.7621]",  # month 13
    "[2026:11:30 14:02:07] \u2013 [3] \u2013 [12] \u2013 [nan]",
    "[2026:11:30 14:02:07] \u2013 [3] \u2013 [12] \u2013 [0.7621] extra",
])
def test_bad_lines_are_rejected(line):
    with pytest.raises(ValueError):
        epochlog.parse_line(line)
