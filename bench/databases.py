"""Scratch databases for a benchmark (and the tests): created next to an administrative URL, with a
unique name, and dropped with whatever is still connected."""

from __future__ import annotations

import uuid

import psycopg


def create_database(admin_url: str) -> str:
    """A new empty database next to ``admin_url``'s; returns its URL."""
    name = f"mnemo_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    base, _, query = admin_url.partition("?")
    url = base.rsplit("/", 1)[0] + "/" + name
    return f"{url}?{query}" if query else url


def drop_database(admin_url: str, url: str) -> None:
    name = url.partition("?")[0].rsplit("/", 1)[1]
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
