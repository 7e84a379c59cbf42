"""Initial schema: every table of DESIGN.md §2 (without the optional vector columns).

Revision ID: 0001
Revises:
Create Date: 2026-11-22 01:36:29.725577
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('chats',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('platform', sa.String(length=16), nullable=False),
    sa.Column('platform_chat_id', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('title', sa.Text(), nullable=True),
    sa.Column('settings', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'"), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("kind IN ('private', 'group')", name=op.f('ck_chats_kind_allowed')),
    sa.CheckConstraint("platform IN ('discord', 'telegram', 'console')", name=op.f('ck_chats_platform_allowed')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_chats')),
    sa.UniqueConstraint('platform', 'platform_chat_id', name=op.f('uq_chats_platform_platform_chat_id'))
    )
    op.create_table('users',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('paused_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_users'))
    )
    op.create_table('identities',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('user_id', sa.BigInteger(), nullable=False),
    sa.Column('platform', sa.String(length=16), nullable=False),
    sa.Column('platform_user_id', sa.String(length=64), nullable=False),
    sa.Column('display_name', sa.Text(), nullable=True),
    sa.Column('locale', sa.String(length=16), nullable=True),
    sa.Column('timezone', sa.String(length=64), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("platform IN ('discord', 'telegram', 'console')", name=op.f('ck_identities_platform_allowed')),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_identities_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_identities')),
    sa.UniqueConstraint('platform', 'platform_user_id', name=op.f('uq_identities_platform_platform_user_id'))
    )
    op.create_index(op.f('ix_identities_user_id'), 'identities', ['user_id'], unique=False)
    op.create_table('jobs_outbox',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('task', sa.String(length=128), nullable=False),
    sa.Column('payload', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'"), nullable=False),
    sa.Column('dedup_key', sa.Text(), nullable=True),
    sa.Column('user_id', sa.BigInteger(), nullable=True),
    sa.Column('status', sa.String(length=16), server_default=sa.text("'pending'"), nullable=False),
    sa.Column('attempts', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('available_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('sent_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('done_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("status IN ('pending', 'sent', 'done', 'failed')", name=op.f('ck_jobs_outbox_status_allowed')),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_jobs_outbox_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs_outbox'))
    )
    op.create_index('ix_jobs_outbox_owed', 'jobs_outbox', ['available_at'], unique=False, postgresql_where=sa.text("status IN ('pending', 'sent')"))
    op.create_index('uq_jobs_outbox_dedup_key', 'jobs_outbox', ['dedup_key'], unique=True, postgresql_where=sa.text('dedup_key IS NOT NULL'))
    op.create_table('memory_events',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('user_id', sa.BigInteger(), nullable=False),
    sa.Column('memory_id', sa.BigInteger(), nullable=True),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('actor', sa.String(length=16), nullable=False),
    sa.Column('before', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('after', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("action IN ('add', 'update', 'boost', 'delete', 'supersede', 'promote', 'decay', 'forget', 'expire')", name=op.f('ck_memory_events_action_allowed')),
    sa.CheckConstraint("actor IN ('user', 'llm', 'rule', 'admin')", name=op.f('ck_memory_events_actor_allowed')),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_memory_events_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memory_events'))
    )
    op.create_index(op.f('ix_memory_events_memory_id'), 'memory_events', ['memory_id'], unique=False)
    op.create_index(op.f('ix_memory_events_user_id_created_at'), 'memory_events', ['user_id', 'created_at'], unique=False)
    op.create_table('profiles',
    sa.Column('user_id', sa.BigInteger(), nullable=False),
    sa.Column('core_summary', sa.Text(), server_default=sa.text("''"), nullable=False),
    sa.Column('scratchpad', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'"), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_profiles_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('user_id', name=op.f('pk_profiles'))
    )
    op.create_table('sessions',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('user_id', sa.BigInteger(), nullable=False),
    sa.Column('chat_id', sa.BigInteger(), nullable=False),
    sa.Column('current_topic', sa.Text(), nullable=True),
    sa.Column('context_variables', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'"), nullable=False),
    sa.Column('turn_count', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('last_emotion', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('next_strategy', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('closed_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['chat_id'], ['chats.id'], name=op.f('fk_sessions_chat_id_chats'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_sessions_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_sessions'))
    )
    op.create_index(op.f('ix_sessions_updated_at'), 'sessions', ['updated_at'], unique=False, postgresql_where=sa.text('closed_at IS NULL'))
    op.create_index('uq_sessions_open_user_chat', 'sessions', ['user_id', 'chat_id'], unique=True, postgresql_where=sa.text('closed_at IS NULL'))
    op.create_table('episodes',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('user_id', sa.BigInteger(), nullable=False),
    sa.Column('chat_id', sa.BigInteger(), nullable=True),
    sa.Column('session_id', sa.BigInteger(), nullable=True),
    sa.Column('summary', sa.Text(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('entities', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'[]'"), nullable=False),
    sa.Column('importance', sa.Float(), server_default=sa.text('1.0'), nullable=False),
    sa.Column('decayed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('search_tokens', sa.Text(), server_default=sa.text("''"), nullable=False),
    sa.Column('search_tsv', postgresql.TSVECTOR(), sa.Computed("to_tsvector('simple'::regconfig, coalesce(search_tokens, ''))", persisted=True), nullable=False),
    sa.Column('tokenizer_version', sa.SmallInteger(), server_default=sa.text('0'), nullable=False),
    sa.Column('embedding_model', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['chat_id'], ['chats.id'], name=op.f('fk_episodes_chat_id_chats'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], name=op.f('fk_episodes_session_id_sessions'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_episodes_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_episodes'))
    )
    op.create_index('ix_episodes_search_tsv', 'episodes', ['search_tsv'], unique=False, postgresql_using='gin')
    op.create_index(op.f('ix_episodes_user_id_ended_at'), 'episodes', ['user_id', 'ended_at'], unique=False)
    op.create_table('conversation_turns',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('user_id', sa.BigInteger(), nullable=False),
    sa.Column('chat_id', sa.BigInteger(), nullable=False),
    sa.Column('session_id', sa.BigInteger(), nullable=True),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('platform_message_id', sa.String(length=64), nullable=True),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('token_estimate', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('extracted', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.Column('episode_id', sa.BigInteger(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("role IN ('user', 'assistant')", name=op.f('ck_conversation_turns_role_allowed')),
    sa.ForeignKeyConstraint(['chat_id'], ['chats.id'], name=op.f('fk_conversation_turns_chat_id_chats'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['episode_id'], ['episodes.id'], name=op.f('fk_conversation_turns_episode_id_episodes'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], name=op.f('fk_conversation_turns_session_id_sessions'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_conversation_turns_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_conversation_turns'))
    )
    op.create_index(op.f('ix_conversation_turns_session_id_id'), 'conversation_turns', ['session_id', 'id'], unique=False)
    op.create_index('ix_conversation_turns_unextracted', 'conversation_turns', ['created_at'], unique=False, postgresql_where=sa.text("NOT extracted AND role = 'user'"))
    op.create_index(op.f('ix_conversation_turns_user_id_created_at'), 'conversation_turns', ['user_id', 'created_at'], unique=False)
    op.create_index('uq_conversation_turns_chat_message', 'conversation_turns', ['chat_id', 'role', 'platform_message_id'], unique=True, postgresql_where=sa.text('platform_message_id IS NOT NULL'))
    op.create_table('memories',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('user_id', sa.BigInteger(), nullable=False),
    sa.Column('type', sa.String(length=16), nullable=False),
    sa.Column('subject', sa.Text(), nullable=True),
    sa.Column('predicate', sa.Text(), nullable=True),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('value', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('importance', sa.Float(), server_default=sa.text('1.0'), nullable=False),
    sa.Column('confidence', sa.Float(), server_default=sa.text('0.5'), nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('verified', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.Column('tier', sa.String(length=16), server_default=sa.text("'long'"), nullable=False),
    sa.Column('search_tokens', sa.Text(), server_default=sa.text("''"), nullable=False),
    sa.Column('search_tsv', postgresql.TSVECTOR(), sa.Computed("to_tsvector('simple'::regconfig, coalesce(search_tokens, ''))", persisted=True), nullable=False),
    sa.Column('tokenizer_version', sa.SmallInteger(), server_default=sa.text('0'), nullable=False),
    sa.Column('embedding_model', sa.Text(), nullable=True),
    sa.Column('source_turn_id', sa.BigInteger(), nullable=True),
    sa.Column('session_id', sa.BigInteger(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('last_accessed', sa.DateTime(timezone=True), nullable=True),
    sa.Column('access_count', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('superseded_by', sa.BigInteger(), nullable=True),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('deleted_at', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint("source IN ('user_stated', 'inferred', 'system', 'manual')", name=op.f('ck_memories_source_allowed')),
    sa.CheckConstraint("tier IN ('transient', 'short', 'long', 'core', 'system')", name=op.f('ck_memories_tier_allowed')),
    sa.CheckConstraint("type IN ('preference', 'fact', 'event', 'person', 'todo', 'pattern', 'rule')", name=op.f('ck_memories_type_allowed')),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], name=op.f('fk_memories_session_id_sessions'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['source_turn_id'], ['conversation_turns.id'], name=op.f('fk_memories_source_turn_id_conversation_turns'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['superseded_by'], ['memories.id'], name=op.f('fk_memories_superseded_by_memories'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_memories_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memories'))
    )
    op.create_index('ix_memories_search_tsv', 'memories', ['search_tsv'], unique=False, postgresql_using='gin')
    op.create_index('ix_memories_user_active', 'memories', ['user_id', 'type'], unique=False, postgresql_where=sa.text('deleted_at IS NULL AND superseded_by IS NULL'))
    op.create_index(op.f('ix_memories_user_id_last_accessed'), 'memories', ['user_id', 'last_accessed'], unique=False)
    op.create_index(op.f('ix_memories_user_id_subject_predicate'), 'memories', ['user_id', 'subject', 'predicate'], unique=False)
    op.create_table('todos',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('user_id', sa.BigInteger(), nullable=False),
    sa.Column('chat_id', sa.BigInteger(), nullable=True),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('due_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('remind_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('timezone', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=16), server_default=sa.text("'pending'"), nullable=False),
    sa.Column('source', sa.String(length=16), server_default=sa.text("'command'"), nullable=False),
    sa.Column('source_turn_id', sa.BigInteger(), nullable=True),
    sa.Column('claimed_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('sent_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('attempts', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("status IN ('pending', 'sent', 'done', 'cancelled')", name=op.f('ck_todos_status_allowed')),
    sa.ForeignKeyConstraint(['chat_id'], ['chats.id'], name=op.f('fk_todos_chat_id_chats'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['source_turn_id'], ['conversation_turns.id'], name=op.f('fk_todos_source_turn_id_conversation_turns'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_todos_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_todos'))
    )
    op.create_index('ix_todos_due', 'todos', ['remind_at'], unique=False, postgresql_where=sa.text("status = 'pending'"))
    op.create_index(op.f('ix_todos_user_id_status'), 'todos', ['user_id', 'status'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_todos_user_id_status'), table_name='todos')
    op.drop_index('ix_todos_due', table_name='todos', postgresql_where=sa.text("status = 'pending'"))
    op.drop_table('todos')
    op.drop_index(op.f('ix_memories_user_id_subject_predicate'), table_name='memories')
    op.drop_index(op.f('ix_memories_user_id_last_accessed'), table_name='memories')
    op.drop_index('ix_memories_user_active', table_name='memories', postgresql_where=sa.text('deleted_at IS NULL AND superseded_by IS NULL'))
    op.drop_index('ix_memories_search_tsv', table_name='memories', postgresql_using='gin')
    op.drop_table('memories')
    op.drop_index('uq_conversation_turns_chat_message', table_name='conversation_turns', postgresql_where=sa.text('platform_message_id IS NOT NULL'))
    op.drop_index(op.f('ix_conversation_turns_user_id_created_at'), table_name='conversation_turns')
    op.drop_index('ix_conversation_turns_unextracted', table_name='conversation_turns', postgresql_where=sa.text("NOT extracted AND role = 'user'"))
    op.drop_index(op.f('ix_conversation_turns_session_id_id'), table_name='conversation_turns')
    op.drop_table('conversation_turns')
    op.drop_index(op.f('ix_episodes_user_id_ended_at'), table_name='episodes')
    op.drop_index('ix_episodes_search_tsv', table_name='episodes', postgresql_using='gin')
    op.drop_table('episodes')
    op.drop_index('uq_sessions_open_user_chat', table_name='sessions', postgresql_where=sa.text('closed_at IS NULL'))
    op.drop_index(op.f('ix_sessions_updated_at'), table_name='sessions', postgresql_where=sa.text('closed_at IS NULL'))
    op.drop_table('sessions')
    op.drop_table('profiles')
    op.drop_index(op.f('ix_memory_events_user_id_created_at'), table_name='memory_events')
    op.drop_index(op.f('ix_memory_events_memory_id'), table_name='memory_events')
    op.drop_table('memory_events')
    op.drop_index('uq_jobs_outbox_dedup_key', table_name='jobs_outbox', postgresql_where=sa.text('dedup_key IS NOT NULL'))
    op.drop_index('ix_jobs_outbox_owed', table_name='jobs_outbox', postgresql_where=sa.text("status IN ('pending', 'sent')"))
    op.drop_table('jobs_outbox')
    op.drop_index(op.f('ix_identities_user_id'), table_name='identities')
    op.drop_table('identities')
    op.drop_table('users')
    op.drop_table('chats')
