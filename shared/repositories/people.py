"""Users, their platform identities, and chats."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from shared.db.models import Chat, Identity, User
from shared.text import clean_text


class UserRepository:
    """Finds or creates the user behind a platform account."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def identify(
        self,
        platform: str,
        platform_user_id: str,
        *,
        display_name: str | None = None,
        locale: str | None = None,
        timezone: str | None = None,
    ) -> Identity:
        """The identity for this account, created with a new user the first time it is seen; ``timezone`` is the
        user's (all their accounts')."""
        identity = self.identity(platform, platform_user_id)
        if identity is None:
            identity = self._create(platform, platform_user_id)
        if display_name is not None:
            identity.display_name = clean_text(display_name, 200)
        if locale is not None:
            identity.locale = locale[:16]
        if timezone is not None:
            self.set_timezone(identity.user_id, timezone)
        return identity

    def identity(self, platform: str, platform_user_id: str) -> Identity | None:
        query = select(Identity).where(
            Identity.platform == platform, Identity.platform_user_id == str(platform_user_id))
        return self.session.scalars(query).one_or_none()

    def get(self, user_id: int) -> User | None:
        return self.session.get(User, user_id)

    def identities_of(self, user_id: int) -> list[Identity]:
        query = select(Identity).where(Identity.user_id == user_id).order_by(Identity.id)
        return list(self.session.scalars(query))

    def identity_on(self, user_id: int, platform: str) -> Identity | None:
        """The user's (first) identity on ``platform``."""
        query = (select(Identity).where(Identity.user_id == user_id, Identity.platform == platform)
                 .order_by(Identity.id).limit(1))
        return self.session.scalars(query).first()

    def set_paused(self, user_id: int, paused_at: datetime | None) -> None:
        """Pause (a time) or resume (None) remembering for this user."""
        user = self.session.get(User, user_id)
        if user is not None:
            user.paused_at = paused_at

    def set_timezone(self, user_id: int, timezone: str | None) -> None:
        """The user's time zone (checked by the caller), or None for the operator's default."""
        user = self.session.get(User, user_id)
        if user is not None:
            user.timezone = timezone[:64] if timezone else None

    def mark_zone_told(self, user_id: int, now: datetime) -> bool:
        """Record that the user was told which zone their reminders use; False when they had been told before."""
        user = self.session.get(User, user_id)
        if user is None or user.zone_told_at is not None:
            return False
        user.zone_told_at = now
        return True

    def set_quota_lifted(self, user_id: int, lifted_at: datetime | None) -> bool:
        """Lift the daily token quota for this user (a time), or apply it again (None); False for no such user."""
        user = self.session.get(User, user_id)
        if user is not None:
            user.quota_lifted_at = lifted_at
        return user is not None

    def _create(self, platform: str, platform_user_id: str) -> Identity:
        """Insert user and identity; if another process won the race, use its identity."""
        user = User()
        self.session.add(user)
        self.session.flush()
        inserted = self.session.execute(
            insert(Identity)
            .values(user_id=user.id, platform=platform, platform_user_id=str(platform_user_id))
            .on_conflict_do_nothing(index_elements=["platform", "platform_user_id"])
            .returning(Identity.id)
        ).scalar_one_or_none()
        if inserted is None:
            self.session.delete(user)
        self.session.flush()
        identity = self.identity(platform, platform_user_id)
        assert identity is not None
        return identity


class ChatRepository:
    """Finds or creates the chats the bot talks in."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def get_or_create(self, platform: str, platform_chat_id: str, kind: str, title: str | None = None) -> Chat:
        """The chat, inserted race-free the first time it is seen."""
        query = select(Chat).where(Chat.platform == platform, Chat.platform_chat_id == str(platform_chat_id))
        chat = self.session.scalars(query).one_or_none()
        if chat is None:
            self.session.execute(
                insert(Chat)
                .values(platform=platform, platform_chat_id=str(platform_chat_id), kind=kind)
                .on_conflict_do_nothing(index_elements=["platform", "platform_chat_id"])
            )
            chat = self.session.scalars(query).one()
        if title is not None:
            chat.title = clean_text(title, 200)
        return chat

    def get(self, chat_id: int) -> Chat | None:
        return self.session.get(Chat, chat_id)

    def lock_by_platform_ids(self, platform: str, platform_chat_ids: list[str]) -> dict[str, Chat]:
        """The known chats among ``platform_chat_ids``, locked, by their platform chat id."""
        query = (select(Chat).where(Chat.platform == platform, Chat.platform_chat_id.in_(platform_chat_ids))
                 .with_for_update())
        return {chat.platform_chat_id: chat for chat in self.session.scalars(query)}
