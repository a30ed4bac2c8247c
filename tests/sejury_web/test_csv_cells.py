"""``sejury_web.csv_cells``: the one helper every CSV of the product writes through."""

import csv
import io

import pytest

from sejury_web.csv_cells import csv_writer, spreadsheet_text


@pytest.mark.parametrize("text", ["=1+1", "+1", "-cmd", "@SUM(A1)", "\tx", "\rx"])
def test_formula_starts_become_text(text: str) -> None:
    assert spreadsheet_text(text) == f"'{text}"


@pytest.mark.parametrize("value", ["BUG-1", "a=b", "", -1.5, 3, None])
def test_other_cells_are_left_alone(value: object) -> None:
    assert spreadsheet_text(value) == value


def test_the_writer_applies_it_to_every_text_cell() -> None:
    out = io.StringIO()
    csv_writer(out).writerow(["=cmd", -2.5, "ok"])
    assert next(csv.reader(io.StringIO(out.getvalue()))) == ["'=cmd", "-2.5", "ok"]
