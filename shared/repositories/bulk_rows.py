"""Inserting many new rows of one table in one statement (an import), not one object at a time.

Rows are built as ORM objects, so whatever a model checks when a value is set (a memory's text loses
its direction controls) holds as for any write, and get their search tokens as the ORM hook gives them
(:mod:`shared.db.search_sync`). Then each column goes to PostgreSQL as one array parameter:
``INSERT … SELECT … FROM unnest(:a, :b, …) WITH ORDINALITY ORDER BY ordinality RETURNING id, …``. A
multi-row ``VALUES`` list would cost a parameter per value (and its parsing and planning, several times
slower); ids are drawn in the order rows are inserted, so sorting what comes back by id gives the rows'
order. A value a row leaves out (None) becomes the column's server default, or SQL NULL (never JSON
``null``), as it would had the row been inserted alone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Column, ColumnElement, DefaultClause, Row, Table, Text, bindparam, cast, func, inspect, select
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, insert
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import instance_dict, set_committed_value

from shared.db.models import Base
from shared.db.search_sync import SEARCHABLE, refresh_search_tokens


def insert_rows(session: Session, rows: Sequence[Base]) -> None:
    """Insert new rows of one model; their ids and the values of columns with a server default are set on them
    on return. The rows are not added to the session: they stay detached, and are changed through statements."""
    if not rows:
        return
    model = type(rows[0])
    if any(type(row) is not model for row in rows):
        raise ValueError("rows of one model at a time")
    for row in rows:
        if isinstance(row, SEARCHABLE):
            refresh_search_tokens(row)
    keys = [attribute.key for attribute in inspect(model).column_attrs]
    values = [{key: given[key] for key in keys if key in given} for given in map(instance_dict, rows)]
    generated = [column.key for column in _generated(_table_of(model))]
    for row, new in zip(rows, insert_values(session, model, values), strict=True):
        for key, value in zip(generated, new, strict=True):
            set_committed_value(row, key, value)


def insert_values(session: Session, model: type[Base], values: Sequence[dict[str, Any]], *,
                  skip_conflicts: bool = False) -> list[Row[*tuple[Any, ...]]]:
    """Insert new rows of ``model`` given as column values, in one statement; for each, in order, the values
    of its id and of the columns with a server default. With ``skip_conflicts``, a row that a unique index
    refuses is left out (and nothing is returned for it)."""
    if not values:
        return []
    table = _table_of(model)
    names = [column.key for column in table.columns if any(column.key in row for row in values)]
    if "id" in names:
        raise ValueError("new rows get their ids from the database")
    given = func.unnest(*(_array_of(table.columns[name], [row.get(name) for row in values]) for name in names)
                        ).table_valued(*names, with_ordinality="position").render_derived(name="given")
    chosen = select(*(_or_default(table.columns[name], given.columns[name]) for name in names))
    adding = insert(table).from_select(names, chosen.order_by(given.columns.position))
    if skip_conflicts:
        adding = adding.on_conflict_do_nothing()
    return sorted(session.execute(adding.returning(*_generated(table))), key=lambda row: row.id)


def _table_of(model: type[Base]) -> Table:
    """The table a model is mapped to (every model here maps one ``Table``, not a join or a select)."""
    table = model.__table__
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not mapped to one table")
    return table


def _generated(table: Table) -> list[Column[Any]]:
    """The columns whose value the database may choose: the id, and those with a server default."""
    return [column for column in table.columns
            if (column.server_default is not None or column.primary_key) and column.computed is None]


def _array_of(column: Column[Any], items: list[Any]) -> ColumnElement[Any]:
    """One column's values as a typed array parameter. JSON goes as text (a JSON list is one value, not a
    dimension of the array), and None stays SQL NULL there too, never JSON ``null``."""
    if isinstance(column.type, JSONB):
        texts = [None if item is None else json.dumps(item, ensure_ascii=False) for item in items]
        return cast(bindparam(column.key, texts, type_=ARRAY(Text)), ARRAY(JSONB))
    return cast(bindparam(column.key, items, type_=ARRAY(column.type)), ARRAY(column.type))


def _or_default(column: Column[Any], given: ColumnElement[Any]) -> ColumnElement[Any]:
    default = column.server_default
    if default is None:
        return given
    if not isinstance(default, DefaultClause):  # set by the database some other way (a trigger): nothing to write
        raise TypeError(f"{column.key}: a server default that is not an expression")
    return func.coalesce(given, default.arg)
