"""The lines about a user's time zone that ``/timezone``'s answer (:mod:`shared.reminders.zone_texts`) and a reply's
notices (:mod:`shared.conversation.notice_texts`) share, in English and Chinese. Pure: it imports nothing."""

from __future__ import annotations

DEFAULT_ZONE_LINES = (
    "(Times are in {zone}, this bot's default, as you haven't set your time zone. Tell me where you are, like "
    "“I'm in Seattle”, or use /timezone <city>.)",
    "（时间按本机器人默认的 {zone} 计算，因为你还没设置时区。告诉我你在哪里，比如“我在上海”，"
    "或者发送 /timezone 城市名。）")
"""(English, Chinese) of the one-time note on which zone a reminder used while the user had none."""
MOVED_LINES = {
    "clock_one": ("{count} pending reminder keeps its clock time (08:30 is still 08:30, now in this zone).",
                  "{count} 个待提醒事项保持原来的钟点（比如 8:30 还是新时区的 8:30）。"),
    "clock": ("{count} pending reminders keep their clock time (08:30 is still 08:30, now in this zone).",
              "{count} 个待提醒事项保持原来的钟点（比如 8:30 还是新时区的 8:30）。"),
    "moment_one": ("{count} set as “in N minutes” keeps its moment.", "{count} 个按“几分钟后”设置的提醒时间不变。"),
    "moment": ("{count} set as “in N minutes” keep their moment.", "{count} 个按“几分钟后”设置的提醒时间不变。"),
}
"""(English, Chinese) of how pending reminders follow a new zone: clock times stay on the clock, amounts of time
keep their moment (``/timezone``'s answer and the note under a reply say the same)."""
