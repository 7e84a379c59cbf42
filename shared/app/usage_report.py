"""``mnemo usage``: what the language model cost, for operators (totals, by kind, by day, top users, or one
user), and lifting or restoring one user's daily token quota."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from shared.settings import Settings
from shared.usage.report import DEFAULT_TOP_USERS, MAX_REPORT_DAYS

USER_HELP = "a user id, or platform:platform_user_id (e.g. telegram:12345)"


def usage_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", help=f"only this user: {USER_HELP}")
    parser.add_argument("--days", type=int, default=30, help=f"UTC days up to today, 1-{MAX_REPORT_DAYS} (default 30)")
    parser.add_argument("--top", type=int, default=DEFAULT_TOP_USERS, help="how many top users to list")
    quota = parser.add_mutually_exclusive_group()
    quota.add_argument("--lift", metavar="USER", help=f"exempt this user from the daily token quota ({USER_HELP})")
    quota.add_argument("--restore", metavar="USER", help="apply the daily token quota to this user again")


def run_usage(settings: Settings, args: argparse.Namespace) -> int:
    from shared.app.bootstrap import runtime
    from shared.usage.policy import UsagePolicy
    from shared.usage.report import find_user, operator_usage
    from shared.usage.texts import operator_usage_text

    if not 1 <= args.days <= MAX_REPORT_DAYS or args.top < 1:
        print(f"mnemo usage: --days is 1 to {MAX_REPORT_DAYS} and --top at least 1")
        return 2
    now = datetime.now(UTC)
    with runtime(settings) as rt, rt.uow() as uow:
        wanted = args.lift or args.restore or args.user
        user_id = find_user(uow, wanted) if wanted else None
        if wanted and user_id is None:
            print(f"mnemo usage: no user {wanted!r} ({USER_HELP})")
            return 1
        if user_id is not None and (args.lift or args.restore):
            uow.users.set_quota_lifted(user_id, now if args.lift else None)
            uow.commit()
            print(f"User {user_id}: the daily token quota {'no longer applies' if args.lift else 'applies again'}.")
            return 0
        report = operator_usage(uow, now, UsagePolicy.from_settings(settings), days=args.days, user_id=user_id,
                                top=args.top)
    print(operator_usage_text(report))
    return 0
