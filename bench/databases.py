"""Scratch databases for a benchmark (and the tests): created next to an administrative URL, with a
unique name, and dropped with whatever is still connected."""

from __future__ import annotations

import uuid
from typing import LiteralString

import psycopg
from psycopg.rows import TupleRow


def create_database(admin_url: str, template: str | None = None) -> str:
    """A new database next to ``admin_url``'s, empty or a copy of the database at URL ``template`` (which
    nobody may be connected to); returns its URL."""
    name = f"mnemo_test_{uuid.uuid4().hex[:10]}"
    copy_of = f' TEMPLATE "{database_name(template)}"' if template else ""
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"{copy_of}')
    base, _, query = admin_url.partition("?")
    url = base.rsplit("/", 1)[0] + "/" + name
    return f"{url}?{query}" if query else url


def drop_database(admin_url: str, url: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{database_name(url)}" WITH (FORCE)')


def one_row(connection: psycopg.Connection[TupleRow], sql: LiteralString) -> TupleRow:
    """The row of a query that returns one (an aggregate, a ``SHOW``, the first of a table that has rows)."""
    row = connection.execute(sql).fetchone()
    if row is None:
        raise RuntimeError(f"no row from {sql!r}")
    return row


def database_name(url: str) -> str:
    return url.partition("?")[0].rsplit("/", 1)[1]
