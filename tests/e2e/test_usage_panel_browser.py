"""The panel's usage card in headless Chromium against a real ``mnemo api`` (prices and a daily quota set in
its environment): today, 7 and 30 days, the share cached, the cost and what is left today, in both languages.
The set-up is tests/e2e/test_panel_browser.py's; one browser session keeps the added time small."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from selenium.webdriver.common.by import By

from shared.commands.service import Caller
from shared.llm.metering import CallUsage
from tests.e2e.test_panel_browser import (  # noqa: F401  (panel_server is a fixture)
    PanelServer,
    by_id,
    chromium,
    page_errors,
    panel_server,
    shot,
    sign_in,
    wait,
)

GINA = Caller("telegram", "9191", display_name="Gina")
PRICED = {"LLM_PRICE_INPUT_PER_MTOK": "1", "LLM_PRICE_CACHED_INPUT_PER_MTOK": "0.5",
          "LLM_PRICE_OUTPUT_PER_MTOK": "4", "LLM_PRICE_CURRENCY": "CNY", "LLM_DAILY_TOKENS_PER_USER": "5000"}
ANSWER = CallUsage("turn", "fake-chat", prompt_tokens=1000, completion_tokens=200, cached_tokens=500)


@pytest.fixture(scope="module")
def priced_environment() -> Iterator[None]:
    """Prices and a quota in the environment ``mnemo api`` starts with (set before the server starts)."""
    saved = {name: os.environ.get(name) for name in PRICED}
    os.environ.update(PRICED)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="module")
def priced_panel(priced_environment, panel_server) -> PanelServer:  # noqa: F811
    return panel_server


def spend(panel: PanelServer, caller: Caller, when: datetime, messages: int) -> None:
    panel.commands.panel_link(caller)  # the user exists
    with panel.commands.uow_factory() as uow:
        user_id = uow.users.identity(caller.platform, caller.platform_user_id).user_id
        uow.usage.record(user_id, None, [ANSWER] * messages, when, messages=messages)
        uow.commit()


def card_facts(driver) -> dict[str, tuple[str, str, str, str, str]]:
    """Each usage card's (messages, tokens, cached, cost) by its title."""
    facts = {}
    for card in driver.find_elements(By.CSS_SELECTOR, "#usage-list [data-testid=usage-card]"):
        def text(testid: str, card=card) -> str:
            return card.find_element(By.CSS_SELECTOR, f"[data-testid={testid}]").get_attribute("textContent")
        facts[text("usage-window")] = tuple(text(name) for name in ("usage-messages", "usage-tokens", "usage-cached",
                                                                    "usage-cost"))
    return facts


def test_the_usage_card_shows_the_three_windows_the_cost_and_what_is_left_in_both_languages(priced_panel):
    now = datetime.now(UTC)
    spend(priced_panel, GINA, now, messages=2)
    spend(priced_panel, GINA, now - timedelta(days=10), messages=1)

    with chromium() as driver:
        sign_in(driver, priced_panel.sign_in_link(GINA))
        wait(driver).until(lambda d: len(card_facts(d)) == 3, "the usage cards did not appear")
        cost_today = f"{(2 * (500 * 1 + 500 * 0.5 + 200 * 4)) / 1e6:.4f} CNY"
        assert card_facts(driver) == {"Today": ("2", "2,400", "50%", cost_today),
                                      "7 days": ("2", "2,400", "50%", cost_today),
                                      "30 days": ("3", "3,600", "50%", f"{3 * 1550 / 1e6:.4f} CNY")}
        left = "2,600 of your 5,000 daily tokens left today (resets 00:00 UTC)."
        assert by_id(driver, "usage-allowance").text == left
        shot(driver, "20-usage")

        by_id(driver, "lang-toggle").click()
        wait(driver).until(lambda d: "今天" in card_facts(d), "the usage cards were not redrawn in 中文")
        assert driver.find_element(By.ID, "usage-heading").text == "用量（按 UTC 日计算）"
        assert "今天还剩 2,600" in driver.find_element(By.ID, "usage-allowance").text
        shot(driver, "21-usage-chinese")
        assert page_errors(driver) == []
