"""``mnemo bench``: the suites, their options, and which module runs each (see ``bench/suite.py``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from shared.settings import Settings


def declare_arguments(parser: argparse.ArgumentParser) -> None:
    """The suites of ``mnemo bench`` and their options."""
    suites = parser.add_subparsers(dest="suite", required=True, metavar="SUITE")
    hot = suites.add_parser("hot-path", help="hot-path overhead and conversations in flight (fake LLM)")
    hot.add_argument("--database-url", help="server to create a scratch database on (default: embedded)")
    hot.add_argument("--conversations", type=int, default=200)
    hot.add_argument("--llm-seconds", type=float, default=2.0)
    hot.add_argument("--messages", type=int, default=200)
    hot.add_argument("--usage-ab", action="store_true",
                     help="also the same messages alternately with and without usage recording (its cost)")
    hot.add_argument("--tokens-per-second", type=float, default=None,
                     help="also the time to a reply's first words, a fake model writing at this rate (e.g. 30)")
    hot.add_argument("--live-messages", type=int, default=30, help="messages for the first-words figures")
    hot.add_argument("--out", default="bench/results", help="where the JSON figures go")
    quality = suites.add_parser("quality", help="retrieval quality on LoCoMo (en) and MADial-Bench (zh) vs BM25")
    quality.add_argument("--locomo", default="../shared/data/locomo/locomo-dev.json", help="LoCoMo JSON file")
    quality.add_argument("--madial", default="../shared/data/madial-zh", help="MADial-Bench directory")
    quality.add_argument("--database-url", help="server to create a scratch database on (default: embedded)")
    quality.add_argument("--quick", action="store_true", help="one conversation and 20 dialogues")
    quality.add_argument("--out", default="bench/results")
    quality.add_argument("--hybrid", action=argparse.BooleanOptionalAction, default=None,
                         help="also rank with the local embedder through pgvector (default: when it is installed)")
    memories = suites.add_parser("memories", help="junk rate and coverage of what the offline responder stores "
                                                  "(LoCoMo and MADial-Bench replayed)")
    memories.add_argument("--locomo", default="../shared/data/locomo/locomo-dev.json", help="LoCoMo JSON file")
    memories.add_argument("--madial", default="../shared/data/madial-zh", help="MADial-Bench directory")
    memories.add_argument("--database-url", help="server to create a scratch database on (default: embedded)")
    memories.add_argument("--quick", action="store_true", help="one conversation and 20 dialogues")
    memories.add_argument("--out", default="bench/results")
    replay = suites.add_parser("replay", help="recall through the product's own write path: conversations played "
                                              "as live messages, questions asked at their times (replay.json)")
    replay.add_argument("file", type=Path, help="the conversations, one JSON object a line (bench/replay_format.py)")
    replay.add_argument("--out", default="bench/results/replay", help="where replay.json and report.md go")
    replay.add_argument("--from-locomo", type=Path, metavar="FILE", help="first write FILE from this LoCoMo file")
    replay.add_argument("--from-madial", type=Path, metavar="DIR", help="first write FILE from this MADial-Bench "
                                                                        "directory (with --from-locomo: both)")
    replay.add_argument("--write-only", action="store_true", help="only write FILE (with --from-locomo/--from-madial)")
    replay.add_argument("--limit-conversations", type=int, metavar="N", help="replay the first N conversations")
    replay.add_argument("--quick", action="store_true", help="the first two conversations")
    replay.add_argument("--fake-model", action="store_true",
                        help="a fake model answers every job (bench/replay_model.py); counts model calls per message")
    replay.add_argument("--ask-after-days", type=int, default=0, metavar="N",
                        help="ask every question N days after its own time (the nights between run the daily "
                             "maintenance): what the memory lifecycle keeps")
    replay.add_argument("--database-url", help="server to create a scratch database on (default: DATABASE_URL, "
                                               "else embedded)")
    scale = suites.add_parser("scale", help="retrieval and hot-path latency at 10k, 100k and 1M memories")
    scale.add_argument("--database-url", help="server to create a scratch database on (default: embedded)")
    scale.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated memory counts")
    scale.add_argument("--rounds", default="", help="comma-separated round counts, one per memory size (default: none)")
    scale.add_argument("--users", type=int, default=10_000)
    scale.add_argument("--queries", type=int, default=1000)
    scale.add_argument("--out", default="bench/results")
    scale.add_argument("--keep", metavar="DIR", help="keep the embedded database in DIR; a later run with the same DIR "
                       "measures what it holds without loading it again (after migrating it to this code)")
    dedup = suites.add_parser("dedup", help="nightly dedup time at growing sizes (near-linear?)")
    dedup.add_argument("--database-url", help="server to create a scratch database on (default: embedded)")
    dedup.add_argument("--sizes", default="10000,100000", help="comma-separated memory counts")
    dedup.add_argument("--out", default="bench/results")
    imports = suites.add_parser("import", help="one import of the largest accepted export file, then the same again")
    imports.add_argument("--database-url", help="server to create a scratch database on (default: embedded)")
    imports.add_argument("--entries", type=int, default=None, help="entries in the file (default: the most allowed)")
    imports.add_argument("--out", default="bench/results")
    usage = suites.add_parser("usage", help="reading usage at a million recorded requests; recording a turn's")
    usage.add_argument("--database-url", help="server to create a scratch database on (default: embedded)")
    usage.add_argument("--rows", type=int, default=1_000_000)
    usage.add_argument("--users", type=int, default=10_000)
    usage.add_argument("--reads", type=int, default=300)
    usage.add_argument("--per-user-day", type=int, default=50, help="requests of one active user on one day")
    usage.add_argument("--out", default="bench/results")
    load = suites.add_parser("load", help="the whole system (2 Telegram replicas, 2 Discord shards, 2 workers, beat) "
                                          "under a ramping load of simulated users")
    load.add_argument("--database-url", help="server to create a scratch database on (default: embedded)")
    load.add_argument("--redis-url", help="Redis broker and shared limits (default: the PostgreSQL)")
    load.add_argument("--users", type=int, default=10_000)
    load.add_argument("--llm-seconds", type=float, default=2.0, help="the fake model's time per request")
    load.add_argument("--rates", default="2,5,10,20,30,40,60", help="messages/s offered, stage by stage")
    load.add_argument("--stage-seconds", type=float, default=30.0)
    load.add_argument("--worker-concurrency", type=int, default=2, help="each of the two workers' slots")
    load.add_argument("--reminders-per-stage", type=int, default=100,
                      help="reminders falling due at one moment in each stage after the first")
    load.add_argument("--quick", action="store_true", help="500 users, two 6-second stages (CI)")
    load.add_argument("--out", default="bench/results")
    worker = suites.add_parser("worker", help="extraction jobs/s of one worker; background LLM calls per message")
    prompt = suites.add_parser("prompt", help="memory-context tokens per turn (LoCoMo replayed), LLM calls per message")
    every = suites.add_parser("all", help="every suite; one latest.json, report.md and plots")
    for parser_ in (worker, prompt, every):
        parser_.add_argument("--locomo", default="../shared/data/locomo/locomo-dev.json", help="LoCoMo JSON file")
        parser_.add_argument("--database-url", help="server to create a scratch database on (default: embedded)")
        parser_.add_argument("--quick", action="store_true", help="small sizes (the whole of `all` in minutes)")
        parser_.add_argument("--out", default="bench/results")
    for parser_ in (worker, every):
        parser_.add_argument("--redis-url", help="Redis broker for the worker suite (default: the PostgreSQL)")
    every.add_argument("--madial", default="../shared/data/madial-zh", help="MADial-Bench directory")
    every.add_argument("--hybrid", action=argparse.BooleanOptionalAction, default=None,
                       help="the quality suite's pass with the local embedder (default: when it is installed)")


def run_suite(settings: Settings, args: argparse.Namespace) -> int:
    """Run the chosen suite, print its report; 1 when a suite of ``all`` failed."""
    if args.suite == "replay":
        return _replay(settings, args)
    if args.suite == "all":
        from bench import suite

        suite_options = suite.Options(Path(args.locomo), Path(args.madial), args.database_url, args.redis_url,
                                      Path(args.out), args.quick, args.hybrid)
        return 1 if suite.failed(suite.run_all(suite_options)) else 0
    if args.suite in ("worker", "prompt"):
        from bench import prompt_cost, worker

        if args.suite == "worker":
            figures = worker.run(Path(args.locomo), args.database_url, args.redis_url, Path(args.out), args.quick)
            print(worker.report(figures))
        else:
            print(prompt_cost.report(prompt_cost.run(Path(args.locomo), args.database_url, Path(args.out), args.quick)))
        return 0
    if args.suite == "load":
        from bench import load

        if args.quick:
            load_options = load.Options.quick(args.database_url, args.redis_url, Path(args.out))
        else:
            load_options = load.Options(args.database_url, args.redis_url, Path(args.out), users=args.users,
                                        llm_seconds=args.llm_seconds, stage_seconds=args.stage_seconds,
                                        rates=tuple(float(rate) for rate in args.rates.split(",") if rate.strip()),
                                        worker_concurrency=args.worker_concurrency,
                                        reminders_per_stage=args.reminders_per_stage)
        print(load.report(load.run(load_options)))
        return 0
    if args.suite == "quality":
        from bench import quality

        figures = quality.run(Path(args.locomo), Path(args.madial), args.database_url, Path(args.out),
                              quick=args.quick, hybrid=args.hybrid)
        print(quality.report(figures))
        return 0
    if args.suite == "memories":
        from bench import memories

        print(memories.report(memories.run(Path(args.locomo), Path(args.madial), args.database_url, Path(args.out),
                                           quick=args.quick)))
        return 0
    if args.suite == "scale":
        from bench import scale

        sizes = tuple(int(size) for size in args.sizes.split(",") if size.strip())
        rounds = tuple(int(count) for count in args.rounds.split(",") if count.strip())
        print(scale.report(scale.run(args.database_url, sizes=sizes, users=args.users, out_dir=Path(args.out),
                                     queries=args.queries, rounds=rounds,
                                     keep=Path(args.keep) if args.keep else None)))
        return 0
    if args.suite == "dedup":
        from bench import dedup

        sizes = tuple(int(size) for size in args.sizes.split(",") if size.strip())
        print(dedup.report(dedup.run(args.database_url, sizes, Path(args.out))))
        return 0
    if args.suite == "usage":
        from bench import usage

        print(usage.report(usage.run(args.database_url, Path(args.out), rows=args.rows, users=args.users,
                                     reads=args.reads, per_user_day=args.per_user_day)))
        return 0
    if args.suite == "import":
        from bench import imports

        entries = {} if args.entries is None else {"entries": args.entries}
        print(imports.report(imports.run(args.database_url, out_dir=Path(args.out), **entries)))
        return 0
    from bench import hot_path

    figures = hot_path.run(args.database_url, Path(args.out), conversations=args.conversations,
                           llm_seconds=args.llm_seconds, messages=args.messages, compare_usage=args.usage_ab,
                           tokens_per_second=args.tokens_per_second, live_messages=args.live_messages)
    print(hot_path.report(figures))
    return 0


def _replay(settings: Settings, args: argparse.Namespace) -> int:
    from bench import replay, replay_convert
    from bench.replay_format import ReplayFormatError, write_replay

    if args.from_locomo or args.from_madial:
        conversations = (replay_convert.from_locomo(args.from_locomo) if args.from_locomo else []) + (
            replay_convert.from_madial(args.from_madial) if args.from_madial else [])
        write_replay(args.file, conversations)
        print(f"wrote {len(conversations)} conversations to {args.file}")
    elif args.write_only:
        print("mnemo bench replay: --write-only needs --from-locomo or --from-madial")
        return 2
    if args.write_only:
        return 0
    try:
        figures = replay.run(args.file, Path(args.out), args.database_url or settings.database_url,
                             limit=args.limit_conversations, quick=args.quick,
                             ask_after_days=max(0, args.ask_after_days), fake_model=args.fake_model)
    except (ReplayFormatError, OSError) as exc:
        print(f"mnemo bench replay: {exc}")
        return 2
    print(replay.report(figures))
    return 0
