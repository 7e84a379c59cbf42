"""``mnemo followups [--now WHEN]``: one follow-up scan and its deliveries, now or as of any moment. The beat and
the worker do the same every five minutes (``scan_followups``, ``deliver_followup``); this runs it in the
foreground, to see what would go out and why (an operator trying the settings) or to live through a day in a few
minutes (``--now`` a moment ahead: a console user sees what was sent when they next open ``mnemo chat``)."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime

from shared.app.maintenance_command import as_of
from shared.reminders.service import DeliveryOutcome
from shared.settings import Settings


def followups_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--now", type=as_of, default=None, metavar="WHEN",
                        help="run as of this moment (ISO 8601, e.g. 2027-06-01T14:00+08:00); default: the current "
                             "time")


def run_followups_command(settings: Settings, args: argparse.Namespace) -> int:
    from shared.app.bootstrap import access_service, background_parts, runtime
    from shared.delivery.platform_api import senders_from_settings
    from shared.followups.delivery import FollowupRules, claim_due_followups, deliver_followup
    from shared.limits import shared_storage

    now = args.now or datetime.now(UTC)
    rules = FollowupRules.from_settings(settings)
    with runtime(settings) as rt:
        parts = background_parts(settings, rt.engine)
        senders = senders_from_settings(settings, shared_storage(settings.redis_url, rt.engine))
        blocked = access_service(rt).blocks_any
        outcomes = [deliver_followup(rt.uow, senders, claim.thread_id, claim.attempt, now, rules=rules,
                                     chat_model=parts.chat_model, quota=parts.quota, blocked=blocked)
                    for claim in claim_due_followups(rt.uow, now, rules)]
    print(report_line(now, outcomes))
    return 0


def report_line(now: datetime, outcomes: Iterable[DeliveryOutcome]) -> str:
    """"follow-ups as of 2027-06-01 14:00 UTC: 2 sent (console 1, telegram 1), 1 skipped (quiet hours)"."""
    outcomes = list(outcomes)
    if not outcomes:
        return f"follow-ups as of {now:%Y-%m-%d %H:%M %Z}: none due"
    parts = []
    for kind in ("sent", "retry", "skipped", "refused"):
        of_kind = [outcome for outcome in outcomes if outcome.kind == kind]
        if not of_kind:
            continue
        details = Counter(outcome.platform if kind == "sent" else outcome.reason for outcome in of_kind)
        listed = ", ".join(f"{name} {count}" if kind == "sent" else (f"{name} ×{count}" if count > 1 else str(name))
                           for name, count in details.items())
        parts.append(f"{len(of_kind)} {kind} ({listed})")
    return f"follow-ups as of {now:%Y-%m-%d %H:%M %Z}: " + ", ".join(parts)
