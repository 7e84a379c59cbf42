"""The memory API's OpenAPI document, fuzzed with schemathesis on real PostgreSQL: no input gives a 5xx.

Two passes over every operation: as an operator acting for a real user with memories (so bodies and
parameters reach the services and the database), and with whatever credentials the fuzzer makes up
(so authentication itself is fuzzed). Responses must also match the document.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from bench.databases import create_database, drop_database
from bot.api.app import create_app
from bot.api.auth import USER_HEADER, SignInLimiter
from shared.commands.panel import PanelService
from shared.commands.service import Caller, MemoryCommands
from shared.db.engine import make_engine, session_factory
from shared.repositories.uow import UnitOfWork

ADMIN = "fuzzing-operator-token-0123456789"
EXAMPLES = 25
"""Random examples per operation and run, on top of schemathesis's coverage phase (about 30 deterministic
edge cases per operation: missing, empty, null and unexpected values, other methods); each run draws new ones."""
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
OWNER = Caller("telegram", "31337", display_name="Fuzz Owner")


APP = create_app(PanelService(None, session_lifetime=timedelta(hours=1)), admin_token=ADMIN,
                 public_url="http://testserver", limiter=SignInLimiter(per_address=10_000, overall=10_000))
"""Built at import so schemathesis can read the document; :func:`owner_id` connects it to a database."""
schema = schemathesis.openapi.from_asgi("/api/openapi.json", APP)


@pytest.fixture(scope="module")
def owner_id(system_pg_admin_url, migrated_system_template):
    """A migrated database behind ``APP`` holding one user with memories and a reminder; that user's id."""
    url = create_database(system_pg_admin_url, template=migrated_system_template)
    engine = make_engine(url)
    factory = session_factory(engine)

    def uow() -> UnitOfWork:
        return UnitOfWork(factory)

    commands = MemoryCommands(uow)
    for text in ("preference: oolong tea", "lives in Berlin", "sister is called Mia"):
        commands.remember(OWNER, text)
    commands.add_reminder(OWNER, "in 2 hours call mom")
    with uow() as work:
        user_id = work.users.identity(OWNER.platform, OWNER.platform_user_id).user_id
    APP.state.context.panel.uow_factory = uow
    yield user_id
    APP.state.context.panel.uow_factory = None
    engine.dispose()
    drop_database(system_pg_admin_url, url)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_input_from_an_operator_gives_a_server_error(case, owner_id):
    case.call_and_validate(headers={"Authorization": f"Bearer {ADMIN}", USER_HEADER: str(owner_id)}, checks=CHECKS)


@schema.parametrize()
@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_made_up_credentials_give_a_server_error_or_data(case, owner_id):
    response = case.call_and_validate(checks=CHECKS)
    if case.path != "/api/v1/health":
        assert 400 <= response.status_code < 500, response.text  # never a success without real credentials
