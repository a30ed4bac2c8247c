"""What a reader that keeps what it computed asks to know whether the rows changed: for each
kind of row it read, how many there are and their newest change (a deleted row lowers the
count, a changed one moves the date), all in one query.

Each part is a queryset selecting one aggregate of its rows, without grouping (``COUNT``,
``MAX``, ``SUM`` as a plain function, not Django's ``Count``, which would group): one value
even when there are no rows. :func:`row_version` asks for every part as a scalar subquery of
one ``SELECT``: a page viewed again costs one query to know it may draw what it kept, not
one per kind of row.
"""

from typing import Any

from django.db import connections
from django.db.models import F, Func, QuerySet


def _one(queryset: QuerySet, function: str, field: str) -> QuerySet:
    value = Func(F(field), function=function)
    return queryset.order_by().annotate(_version=value).values("_version")


def count_of(queryset: QuerySet) -> QuerySet:
    return _one(queryset, "COUNT", "pk")


def newest(queryset: QuerySet, field: str) -> QuerySet:
    return _one(queryset, "MAX", field)


def total(queryset: QuerySet, field: str) -> QuerySet:
    return _one(queryset, "SUM", field)


def row_version(*parts: QuerySet) -> tuple[object, ...]:
    """The one value of each part, asked in one query (as the database gives it)."""
    if not parts:
        return ()
    selects: list[str] = []
    params: list[Any] = []
    for part in parts:
        sql, part_params = part.query.sql_with_params()
        selects.append(f"({sql})")
        params.extend(part_params)
    with connections[parts[0].db].cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(selects), params)
        row = cursor.fetchone()
    return tuple(row)
