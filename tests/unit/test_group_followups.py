"""``/followups group on|off``: the group's own switch, changed only by its admins (pure rules)."""

from __future__ import annotations

import pytest

from shared.commands.followups import about_the_group, group_followups
from shared.db.models import Chat
from shared.errors import InvalidCommand
from shared.followups.texts import GroupFollowups, group_text
from shared.followups.timing import group_takes_followups


def group(settings: dict | None = None) -> Chat:
    return Chat(platform="telegram", platform_chat_id="-100", kind="group", settings=settings or {})


@pytest.mark.parametrize("text", ["group on", "GROUP off", "群 开", "channel", " server  status"])
def test_the_group_switch_is_told_by_its_first_word(text):
    assert about_the_group(text)


@pytest.mark.parametrize("text", [None, "", "on", "list", "quiet 22-9", "groupon", "on group"])
def test_the_users_own_settings_are_not_the_group_switch(text):
    assert not about_the_group(text)


def test_an_admin_turns_the_group_on_and_off_and_other_settings_stay():
    chat = group({"title_seen": True})
    assert group_followups(chat, "group on", admin=True) == GroupFollowups(on=True, changed=True)
    assert chat.settings == {"title_seen": True, "followups": True} and group_takes_followups(chat.settings)
    assert group_followups(chat, "群 开启", admin=True) == GroupFollowups(on=True, changed=False)
    assert group_followups(chat, "group off", admin=True) == GroupFollowups(on=False, changed=True)
    assert not group_takes_followups(chat.settings)


def test_anyone_may_see_the_switch_but_only_an_admin_changes_it():
    chat = group({"followups": True})
    assert group_followups(chat, "group", admin=False) == GroupFollowups(on=True)
    with pytest.raises(InvalidCommand) as refused:
        group_followups(chat, "group off", admin=False)
    assert refused.value.key == "followups_group_admin"
    assert chat.settings == {"followups": True}


@pytest.mark.parametrize("text", ["group maybe", "group on now"])
def test_an_unknown_word_changes_nothing(text):
    chat = group()
    with pytest.raises(InvalidCommand) as refused:
        group_followups(chat, text, admin=True)
    assert refused.value.key == "followups_usage" and chat.settings == {}


def test_only_a_true_setting_takes_follow_ups():
    assert [group_takes_followups(s) for s in (None, {}, {"followups": "yes"}, {"followups": 1},
                                                 {"followups": True})] == [False] * 4 + [True]


def test_the_answer_is_in_the_readers_language():
    assert group_text(GroupFollowups(True), "zh-CN").startswith("本群已开启回访")
    assert group_text(GroupFollowups(False), "en").startswith("Follow-ups are off in this group")
