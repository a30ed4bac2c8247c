"""Every CSV the product writes goes through ``csv_writer``: a cell of text that a spreadsheet
would read as a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return: OWASP's CSV injection) is written with a leading apostrophe, so that it shows as the
text it is. Patch keys, bug types and sources come from imported bundles: a patch keyed
``=HYPERLINK("…","x")`` must not become a link that runs. Numbers are written as numbers.
"""

import csv
from collections.abc import Iterable
from typing import Any, Protocol

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(value: Any) -> Any:
    """``value`` as a spreadsheet should show it: text never as a formula, the rest as is."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return f"'{value}"
    return value


class _Writable(Protocol):
    def write(self, text: str, /) -> Any: ...


class SafeWriter:
    """``csv.writer``, with every text cell made safe for spreadsheets."""

    def __init__(self, out: _Writable) -> None:
        self._writer = csv.writer(out)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([spreadsheet_text(cell) for cell in row])


def csv_writer(out: _Writable) -> SafeWriter:
    return SafeWriter(out)
