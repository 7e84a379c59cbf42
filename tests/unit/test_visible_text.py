"""What counts as visible text, and which direction controls a stored memory loses. Pure."""

from __future__ import annotations

import pytest

from shared.text import is_invisible, without_bidi_controls

FAMILY = "\U0001F469\u200d\U0001F469\u200d\U0001F467"  # one emoji made of three, joined by ZWJ


@pytest.mark.parametrize("text", ["\u200b", "\u200c\u200d\u2060", " \ufeff \u00ad ", "\u202e", "\u2066\u2069\u200f",
                                  "\u061c\t\u180e"])
def test_text_of_only_format_characters_and_spaces_is_invisible(text):
    assert is_invisible(text)


@pytest.mark.parametrize("text", [
    "\uffa0\u115f", "\u1160 \u3164", "\u2800\u2800", "\u0301\u0308", "\u20dd", "\ufe0f", "\U000e0100",
    "\u034f", "\ufffc ", "\ue000\uf8ff", "\U0010fffd", "\U000e0041\U000e007f", "\u2029\u3000", "\u0378",
    "\u0903",
], ids=["hangul-halfwidth-and-choseong", "jungseong-and-compat", "braille-blank", "combining-marks",
        "enclosing-circle", "vs16", "vs17", "grapheme-joiner", "object-replacement", "private-use",
        "plane-16-private-use", "tags", "separators", "unassigned", "spacing-mark"])
def test_fillers_marks_alone_private_use_and_unassigned_are_invisible_too(text):
    assert is_invisible(text)


@pytest.mark.parametrize("text", ["a", "\u200bx", FAMILY, "喝茶", "\u202e!", "e\u0301", "\u2764\ufe0f", "한\u3164",
                                  "\u2801", "\ufffd"])
def test_text_with_one_visible_character_is_not(text):
    assert not is_invisible(text)


def test_every_bidirectional_control_goes_and_joiners_stay():
    controls = "".join(map(chr, [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]))
    assert without_bidi_controls(f"{controls[:7]}invoice{controls[7:]} {FAMILY}\u200b") == f"invoice {FAMILY}\u200b"


def test_json_loses_them_in_keys_and_strings_at_any_depth_and_keeps_other_values():
    value = {"\u202epet": ["\u2067cat\u2069", {"age\u200e": 3, "ok": True, "none": None}], "n": 1.5}
    assert without_bidi_controls(value) == {"pet": ["cat", {"age": 3, "ok": True, "none": None}], "n": 1.5}
