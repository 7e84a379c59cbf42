"""``mnemo maintenance [--now WHEN]``: the daily maintenance run, now or as of any moment (time travel for
operators, tests and benchmarks; the beat runs the same code once a day)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from shared.settings import Settings


def maintenance_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--now", type=as_of, default=None, metavar="WHEN",
                        help="run as of this moment (ISO 8601, e.g. 2027-06-01 or 2027-06-01T03:00+00:00); "
                             "default: the current time")


def as_of(value: str) -> datetime:
    """An ISO 8601 date or date-time; UTC when it names no offset."""
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 date or time: {value!r}") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def run_maintenance_command(settings: Settings, args: argparse.Namespace) -> int:
    from shared.app.bootstrap import runtime
    from shared.db.model_gate import model_gate
    from shared.lifecycle.maintenance import run_maintenance
    from shared.llm.client import ChatModel
    from shared.usage.policy import QuotaPolicy

    with runtime(settings) as rt:
        chat_model = ChatModel.from_settings(settings, model_gate(settings, rt.engine))
        report = run_maintenance(rt.uow, args.now or datetime.now(UTC), chat_model=chat_model,
                                 eviction_threshold=settings.memory_eviction_threshold,
                                 conversation_retention_days=settings.conversation_retention_days,
                                 quota=QuotaPolicy.from_settings(settings))
    print(report.line())
    return 0
