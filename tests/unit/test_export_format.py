"""The strict check of an export file (shared/accounts/export_format.py), pure: no database."""

from __future__ import annotations

import json

import pytest

from shared.accounts.export_format import MAX_FILE_ENTRIES, read_export
from shared.commands import texts
from shared.errors import InvalidCommand


def export_file(**sections) -> bytes:
    return json.dumps({"format": "mnemo-export", "version": 1, **sections}).encode()


def test_a_file_with_more_entries_than_one_import_takes_is_refused_whole_with_the_numbers():
    memories = [{"id": n, "type": "fact", "content": "x"} for n in range(1, MAX_FILE_ENTRIES)]
    turns = [{"id": n, "role": "user", "text": "y", "created_at": "2026-01-01T00:00:00Z"} for n in range(1, 3)]
    with pytest.raises(InvalidCommand) as refused:
        read_export(export_file(memories=memories, turns=turns))
    assert (refused.value.key, refused.value.params) == (
        "import_too_many", {"count": MAX_FILE_ENTRIES + 1, "limit": MAX_FILE_ENTRIES})
    assert str(MAX_FILE_ENTRIES) in texts.error_text(refused.value, "en")


def test_a_file_at_the_limit_is_read():
    memories = [{"id": n, "type": "fact", "content": "x"} for n in range(1, MAX_FILE_ENTRIES + 1)]
    assert len(read_export(export_file(memories=memories)).sections["memories"]) == MAX_FILE_ENTRIES


@pytest.mark.parametrize("when", ["9999-12-31T23:59:59-14:00", "9999-06-01T00:00:00+00:00", "1969-12-31T23:59:59Z"])
def test_a_time_outside_1970_to_9998_in_utc_refuses_the_entry_with_the_reason(when):
    document = read_export(export_file(todos=[{"content": "x", "due_at": when, "timezone": "UTC"},
                                              {"content": "y", "due_at": "2027-01-01T09:00:00+08:00",
                                               "timezone": "UTC"}]))
    assert [t["content"] for t in document.sections["todos"]] == ["y"]
    [reason] = document.refused
    assert reason.startswith("todos[0]: due_at")
    assert "from 1970 to 9998 in UTC" in reason


@pytest.mark.parametrize("content", ["\u200b\u200b", " \u2060\ufeff ", "\u202d\u202c", "\u200e"])
def test_an_entry_whose_text_has_nothing_visible_is_refused_as_it_is_by_remember(content):
    document = read_export(export_file(memories=[{"id": 1, "type": "fact", "content": content},
                                                 {"id": 2, "type": "fact", "content": "grows basil \u200d🌿"}]))
    assert [m["content"] for m in document.sections["memories"]] == ["grows basil \u200d🌿"]
    [reason] = document.refused
    assert reason.startswith("memories[0]: content")
