"""What a reader that keeps what it computed asks to know whether the rows changed: for each
kind of row it read, how many there are and their newest change (a deleted row lowers the
count, a changed one moves the date), all in one query.

Each part is a queryset selecting one aggregate of its rows, without grouping (``COUNT``,
``MAX``, ``SUM`` as a plain function, not Django's ``Count``, which would group): one value
even when there are no rows. :func:`row_version` asks for every part as a scalar subquery of
one ``SELECT``: a page viewed again costs one query to know it may draw what it kept, not
one per kind of row.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from django.db import connections
from django.db.models import F, Func, QuerySet

# The compiled query of each ``row_version_of`` key, the newest few: building and compiling a
# dozen querysets costs more than running the query on a small dataset.
COMPILED = 64
_compiled: OrderedDict[Hashable, tuple[list[int], str, str, list[Any]]] = OrderedDict()
_lock = threading.Lock()


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
    return _run(*_compile(parts))


def row_version_of(
    key: Hashable, groups: Callable[[], Sequence[Sequence[QuerySet]]]
) -> tuple[tuple[object, ...], ...]:
    """``row_version`` of every part of ``groups()``, given back group by group, in one query
    compiled once per ``key``: the key must name everything the parts' SQL depends on (a
    dataset's and its runs' ids, say)."""
    with _lock:
        compiled = _compiled.get(key)
        if compiled is not None:
            _compiled.move_to_end(key)
    if compiled is None:
        made = groups()
        parts = [part for group in made for part in group]
        sizes = [len(group) for group in made]
        compiled = (sizes, *_compile(parts)) if parts else (sizes, "", "", [])
        with _lock:
            _compiled[key] = compiled
            while len(_compiled) > COMPILED:
                _compiled.popitem(last=False)
    sizes, alias, sql, params = compiled
    values = _run(alias, sql, params) if sql else ()
    starts = [sum(sizes[:index]) for index in range(len(sizes))]
    return tuple(values[start : start + size] for start, size in zip(starts, sizes, strict=True))


def _compile(parts: Sequence[QuerySet]) -> tuple[str, str, list[Any]]:
    selects: list[str] = []
    params: list[Any] = []
    for part in parts:
        sql, part_params = part.query.sql_with_params()
        selects.append(f"({sql})")
        params.extend(part_params)
    return parts[0].db, "SELECT " + ", ".join(selects), params


def _run(alias: str, sql: str, params: list[Any]) -> tuple[object, ...]:
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return tuple(row)
