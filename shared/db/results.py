"""How many rows a statement changed, typed.

``Session.execute`` is typed to return a plain :class:`~sqlalchemy.engine.Result`; for an INSERT, UPDATE or
DELETE it is a :class:`~sqlalchemy.engine.CursorResult`, which alone knows ``rowcount``.
"""

from __future__ import annotations

from sqlalchemy.engine import CursorResult


def rows_changed(result: object) -> int:
    """The rows an INSERT, UPDATE or DELETE changed (``result`` is what ``execute`` returned for it)."""
    if not isinstance(result, CursorResult):
        raise TypeError(f"a row count asked of {type(result).__name__}, not of a data-changing statement's result")
    return result.rowcount
