"""An id from a person, checked once at the door: in a URL path (the ``<id:…>`` converter),
in a query or a form (:func:`id_parse`), in an API parameter (``api.schemas.Id``).

Every row id is a signed 64-bit integer in every database Django runs on. A longer number
is no id, and must not reach a query: SQLite cannot bind it (``OverflowError``), PostgreSQL
refuses it, and Django checks the range for ``pk=…`` but not for ``pk__in=[…]``. Django's
own ``<int:…>`` converter takes digits of any length, so the URLs use ``<id:…>`` instead,
which answers 404 (no such page) for a number past :data:`MAX_ID`.
"""

import re

MAX_ID = 2**63 - 1  # the largest value of a 64-bit signed integer, a row id's column
NOT_AN_ID = "{what} must be a whole number from 1 to {max}, not {value!r}"

_DIGITS = re.compile(r"[0-9]{1,19}")


def is_id(value: object) -> bool:
    """Whether ``value`` (an int or the text of one, ASCII digits only) is a possible id."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 1 <= value <= MAX_ID
    return isinstance(value, str) and bool(_DIGITS.fullmatch(value)) and 1 <= int(value) <= MAX_ID


def id_parse(value: object, *, what: str = "an id") -> int:
    """``value`` as an id; a :class:`ValueError` saying what an id is when it is not one (too
    long, negative, not a number, digits other than ASCII ones)."""
    if not is_id(value):
        shown = str(value) if len(str(value)) <= 40 else str(value)[:39] + "…"
        raise ValueError(NOT_AN_ID.format(what=what, max=MAX_ID, value=shown))
    return int(str(value))


class IdConverter:
    """``<id:name>`` in a URL: a row id, as ``int`` is, but never past :data:`MAX_ID`."""

    regex = "[0-9]+"

    def to_python(self, value: str) -> int:
        number = int(value) if len(value) <= 19 else MAX_ID + 1
        if number > MAX_ID:
            raise ValueError(value)  # no match: the URL names nothing, a 404
        return number

    def to_url(self, value: int | str) -> str:
        return str(value)
