"""Episodes: summaries of stretches of conversation, searchable like memories."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, literal_column, select
from sqlalchemy.orm import Session

from shared.db.memory_models import Episode
from shared.search.tsquery import prefix_tsquery
from shared.text import clean_text


class EpisodeRepository:
    """One user's episodes; search tokens follow the summary automatically."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, episode: Episode) -> Episode:
        episode.summary = clean_text(episode.summary)
        self.session.add(episode)
        self.session.flush()
        return episode

    def get(self, user_id: int, episode_id: int) -> Episode | None:
        query = select(Episode).where(Episode.user_id == user_id, Episode.id == episode_id)
        return self.session.scalars(query).one_or_none()

    def recent(self, user_id: int, limit: int = 10) -> list[Episode]:
        query = select(Episode).where(Episode.user_id == user_id).order_by(Episode.ended_at.desc()).limit(limit)
        return list(self.session.scalars(query))

    def text_candidates(self, user_id: int, terms: Sequence[str], limit: int = 20) -> list[tuple[Episode, float]]:
        """Episodes matching any term as a prefix, with their ``ts_rank``, best first."""
        tsquery = prefix_tsquery(terms)
        if tsquery is None:
            return []
        query_expr = func.to_tsquery(literal_column("'simple'::regconfig"), tsquery)
        rank = func.ts_rank(Episode.search_tsv, query_expr).label("rank")
        query = (
            select(Episode, rank)
            .where(Episode.user_id == user_id, Episode.search_tsv.op("@@")(query_expr))
            .order_by(rank.desc(), Episode.ended_at.desc())
            .limit(limit)
        )
        return [(episode, float(score)) for episode, score in self.session.execute(query)]

    def matching_or_latest(self, user_id: int, terms: Sequence[str], limit: int) -> list[Episode]:
        """The best ``limit`` episodes matching any term as a prefix or, when none matches, the
        latest one (for continuity); one round trip either way."""
        tsquery = prefix_tsquery(terms)
        if tsquery is None:
            return self.recent(user_id, 1)
        query_expr = func.to_tsquery(literal_column("'simple'::regconfig"), tsquery)
        matches = Episode.search_tsv.op("@@")(query_expr)
        query = (select(Episode, matches.label("matched"))
                 .where(Episode.user_id == user_id)
                 .order_by(matches.desc(), func.ts_rank(Episode.search_tsv, query_expr).desc(),
                           Episode.ended_at.desc())
                 .limit(limit))
        rows = self.session.execute(query).all()
        matched = [episode for episode, is_match in rows if is_match]
        return matched or [episode for episode, _ in rows[:1]]

    def overlapping(self, user_id: int, start: datetime, end: datetime, limit: int) -> list[Episode]:
        """The user's episodes of a sitting that overlaps ``[start, end)``, latest first (a time cue)."""
        query = (select(Episode)
                 .where(Episode.user_id == user_id, Episode.started_at < end, Episode.ended_at >= start)
                 .order_by(Episode.ended_at.desc())
                 .limit(limit))
        return list(self.session.scalars(query))
