"""The web panel in a real headless Chromium against a real ``mnemo api`` on PostgreSQL 15.

The API runs as its own process (``mnemo api``), exactly as deployed; the test process plays the
bot: it seeds memories and hands out /panel sign-in links through the memory-command service, and
checks what the panel changed through that same service. Screenshots of every step land in
``tests/artifacts/panel/`` (not committed). Chromium and its driver come from Debian
(``apt-get install chromium chromium-driver``); Selenium Manager never downloads anything.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as seen
from selenium.webdriver.support.ui import WebDriverWait

from bench.databases import create_database, drop_database
from shared.commands.service import Caller, MemoryCommands
from shared.db.engine import make_engine, session_factory
from shared.repositories.uow import UnitOfWork
from tests.e2e.api_process import api_answers, bound_port
from tests.waiting import POLL_SECONDS, wait_for

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
MNEMO = Path(sys.executable).with_name("mnemo")
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "panel"
SERVER_START_SECONDS = 30
WAIT_SECONDS = 10
DESKTOP = (1280, 900)
PHONE = (390, 844)
ANN = Caller("telegram", "4242", display_name="Ann")
BOB = Caller("discord", "7373", display_name="Bob")
CHEN = Caller("discord", "5151", display_name="Chen")
DANA = Caller("telegram", "6161", display_name="Dana")
EVE = Caller("telegram", "7171", display_name="Eve")
FANG = Caller("discord", "8181", display_name="Fang")
GUS = Caller("telegram", "9292", display_name="Gus")
HUGO = Caller("telegram", "9393", display_name="Hugo")
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync", "--lang=en-US")


@dataclass
class PanelServer:
    base_url: str
    commands: MemoryCommands

    def sign_in_link(self, caller: Caller) -> str:
        return self.commands.panel_link(caller).url

    def contents(self, caller: Caller) -> list[str]:
        return [item.content for item in self.commands.list_memories(caller, page_size=50).items]


def wait_until_up(process: subprocess.Popen, log: Path) -> str:
    """Until ``mnemo api`` answers on the port it bound; its base URL."""
    def answering() -> str | None:
        if process.poll() is not None:
            raise AssertionError(f"mnemo api exited with {process.returncode}:\n{log.read_text()}")
        port = bound_port(log)
        return f"http://127.0.0.1:{port}" if api_answers(port) else None
    return wait_for(answering, SERVER_START_SECONDS, lambda: f"mnemo api to answer:\n{log.read_text()}")


def free_port() -> int:
    """A TCP port of loopback that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def panel_server(system_pg_admin_url: str, migrated_system_template: str) -> Iterator[PanelServer]:
    """``mnemo api`` on a fresh migrated database, and the memory-command service on the same one."""
    database_url = create_database(system_pg_admin_url, template=migrated_system_template)
    engine = make_engine(database_url)
    workdir = Path(tempfile.mkdtemp(prefix="mnemo-panel-"))
    process = None
    assert MNEMO.exists(), f"{MNEMO} is missing: pip install -e . in this virtualenv"
    try:
        # A free port chosen here: the panel's address is PANEL_PUBLIC_URL (sign-ins are accepted from its
        # origin only, and redirects go there), so it must name the port. PYTHONPATH makes the console script
        # run this tree's code.
        port = free_port()
        env = {**os.environ, "DATABASE_URL": database_url, "PANEL_PUBLIC_URL": f"http://127.0.0.1:{port}",
               "MNEMO_DATA_DIR": str(workdir), "LOG_LEVEL": "INFO", "API_PORT": str(port), "PYTHONPATH": str(ROOT)}
        log = workdir / "api.log"
        with log.open("wb") as output:
            process = subprocess.Popen([str(MNEMO), "api", "--host", "127.0.0.1"],
                                       cwd=workdir, env=env, stdout=output, stderr=subprocess.STDOUT)
        base_url = wait_until_up(process, log)
        factory = session_factory(engine)
        yield PanelServer(base_url, MemoryCommands(lambda: UnitOfWork(factory), panel_url=base_url))
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        engine.dispose()
        drop_database(system_pg_admin_url, database_url)
        shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def chromium(downloads: Path | None = None) -> Iterator[WebDriver]:
    """A headless Chromium with its own profile; downloads go to ``downloads`` without asking."""
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: apt-get install -y chromium chromium-driver "
                    "(scripts/services.sh installs them)")
    profile = Path(tempfile.mkdtemp(prefix="mnemo-chromium-"))
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if downloads is not None:
        options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                                  "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        driver.set_window_size(*DESKTOP)
        if downloads is not None:
            driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def shot(driver: WebDriver, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def wait(driver: WebDriver) -> WebDriverWait:
    """Waits that look again when the panel redrew what they were reading (the list is replaced whole), as
    often as the other waits in the tests (Selenium's own default looks only every half second)."""
    return WebDriverWait(driver, WAIT_SECONDS, poll_frequency=POLL_SECONDS,
                         ignored_exceptions=(StaleElementReferenceException,))


def by_id(driver: WebDriver, element_id: str) -> WebElement:
    return wait(driver).until(seen.element_to_be_clickable((By.ID, element_id)))


def cards(driver: WebDriver) -> list[WebElement]:
    return driver.find_elements(By.CSS_SELECTOR, "#memory-list [data-testid=memory-card]")


def card_texts(driver: WebDriver) -> list[str]:
    return [card.find_element(By.CSS_SELECTOR, "[data-testid=memory-content-text]").text for card in cards(driver)]


def wait_for_cards(driver: WebDriver, expected: list[str]) -> None:
    wait(driver).until(lambda d: card_texts(d) == expected, f"memory cards were not {expected}")


def sign_in(driver: WebDriver, link: str, screenshot: str | None = None) -> None:
    """Open a /panel link and press its button, as a user does."""
    driver.get(link)
    button = by_id(driver, "sign-in")
    if screenshot:
        shot(driver, screenshot)
    button.click()
    try:
        wait(driver).until(seen.visibility_of_element_located((By.ID, "app")))
    except TimeoutException:
        shown = f"{driver.current_url}: {driver.find_element(By.TAG_NAME, 'body').text[:300]}"
        raise AssertionError(f"signing in did not open the panel; the browser shows {shown}") from None


def fill_memory_form(driver: WebDriver, content: str, *, type_: str | None = None, key: str | None = None) -> None:
    field = by_id(driver, "memory-content")
    field.clear()
    field.send_keys(content)
    if type_ is not None:
        driver.find_element(By.CSS_SELECTOR, f"#memory-type option[value={type_}]").click()
    if key is not None:
        driver.find_element(By.ID, "memory-key").send_keys(key)


def confirm(driver: WebDriver) -> None:
    by_id(driver, "confirm-ok").click()
    wait(driver).until(seen.invisibility_of_element_located((By.ID, "confirm-dialog")))


def search(driver: WebDriver, words: str) -> None:
    box = by_id(driver, "search")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.BACKSPACE)  # typing, unlike clear(), fires the input event the panel listens to
    box.send_keys(words)


def downloaded(folder: Path) -> Path:
    def done(_driver: object) -> Path | None:
        files = [path for path in folder.iterdir() if path.suffix == ".json"]
        return files[0] if files else None
    return WebDriverWait(None, WAIT_SECONDS).until(done, f"no export file arrived in {folder}")


def page_errors(driver: WebDriver) -> list[str]:
    """Script errors and CSP violations the page logged (failed requests are the API's answers, not errors)."""
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE" and entry.get("source") != "network"]


def test_a_user_edits_forgets_and_adds_memories_and_the_service_sees_each_change(panel_server):
    seeded = panel_server.commands.remember(ANN, "I like oolong tea")

    with chromium() as driver:
        driver.get(f"{panel_server.base_url}/panel/")
        wait(driver).until(seen.visibility_of_element_located((By.ID, "signed-out")))
        assert "/panel" in driver.find_element(By.ID, "signed-out").text
        shot(driver, "01-not-signed-in")

        sign_in(driver, panel_server.sign_in_link(ANN), screenshot="02-sign-in-page")
        wait_for_cards(driver, ["I like oolong tea"])
        card = cards(driver)[0]
        assert card.get_attribute("data-memory-id") == str(seeded.id)
        assert card.find_element(By.CSS_SELECTOR, "[data-testid=memory-uses]").text == "0"
        assert driver.find_element(By.ID, "user-name").text == "Ann"
        shot(driver, "03-signed-in")

        card.find_element(By.CSS_SELECTOR, "[data-testid=memory-edit]").click()
        fill_memory_form(driver, "I like oolong tea, not too strong")
        shot(driver, "04-editing")
        by_id(driver, "memory-save").click()
        wait_for_cards(driver, ["I like oolong tea, not too strong"])
        assert panel_server.contents(ANN) == ["I like oolong tea, not too strong"]

        cards(driver)[0].find_element(By.CSS_SELECTOR, "[data-testid=memory-delete]").click()
        shot(driver, "05-confirm-delete")
        confirm(driver)
        wait(driver).until(seen.visibility_of_element_located((By.ID, "memory-empty")))
        assert panel_server.contents(ANN) == []

        by_id(driver, "add-memory").click()
        fill_memory_form(driver, "My sister <Mei> lives in Taipei", type_="person", key="sister")
        by_id(driver, "memory-save").click()
        wait_for_cards(driver, ["My sister <Mei> lives in Taipei"])  # shown as text, not markup
        added = cards(driver)[0]
        assert added.find_element(By.CSS_SELECTOR, "[data-testid=memory-type-badge]").text == "person"
        assert added.find_element(By.CSS_SELECTOR, "[data-testid=memory-key-text]").text == "sister"
        assert panel_server.contents(ANN) == ["My sister <Mei> lives in Taipei"]
        shot(driver, "06-added")
        assert page_errors(driver) == []


def test_search_filter_and_select_and_delete_work_on_what_the_user_sees(panel_server):
    for text in ("I walk the dog at seven", "I drink green tea", "I drink black tea"):
        panel_server.commands.remember(DANA, text)

    with chromium() as driver:
        sign_in(driver, panel_server.sign_in_link(DANA))
        wait_for_cards(driver, ["I drink black tea", "I drink green tea", "I walk the dog at seven"])

        search(driver, "tea")
        wait_for_cards(driver, ["I drink black tea", "I drink green tea"])
        driver.find_element(By.CSS_SELECTOR, "#type-filter option[value=rule]").click()
        wait(driver).until(seen.visibility_of_element_located((By.ID, "memory-empty")))
        driver.find_element(By.CSS_SELECTOR, "#type-filter option[value='']").click()
        wait_for_cards(driver, ["I drink black tea", "I drink green tea"])

        for card in cards(driver):
            card.find_element(By.CSS_SELECTOR, "[data-testid=memory-select]").click()
        by_id(driver, "delete-selected").click()
        assert "2" in driver.find_element(By.ID, "confirm-text").text
        confirm(driver)
        wait(driver).until(seen.visibility_of_element_located((By.ID, "memory-empty")))
        search(driver, "")
        wait_for_cards(driver, ["I walk the dog at seven"])
        assert panel_server.contents(DANA) == ["I walk the dog at seven"]
        shot(driver, "07-selected-deleted")


def test_export_then_clear_all_then_import_brings_the_memories_back(panel_server, tmp_path):
    panel_server.commands.remember(EVE, "I was born in Chengdu")
    downloads = tmp_path / "downloads"
    downloads.mkdir()

    with chromium(downloads) as driver:
        sign_in(driver, panel_server.sign_in_link(EVE))
        wait_for_cards(driver, ["I was born in Chengdu"])

        by_id(driver, "export").click()
        export = downloaded(downloads)
        exported = [entry["content"] for entry in json.loads(export.read_text(encoding="utf-8"))["memories"]]
        assert exported == ["I was born in Chengdu"]

        by_id(driver, "clear-all").click()
        assert not driver.find_element(By.ID, "confirm-ok").is_enabled()  # not before the box is ticked
        driver.find_element(By.ID, "confirm-check").click()
        shot(driver, "08-confirm-clear-all")
        confirm(driver)
        wait(driver).until(seen.visibility_of_element_located((By.ID, "memory-empty")))
        assert panel_server.contents(EVE) == []

        driver.find_element(By.ID, "import-file").send_keys(str(export))
        wait_for_cards(driver, ["I was born in Chengdu"])
        assert "memories 1" in driver.find_element(By.ID, "notice").text
        assert panel_server.contents(EVE) == ["I was born in Chengdu"]
        shot(driver, "09-imported")


def test_importing_a_file_over_the_body_limit_says_the_file_is_too_large(panel_server, tmp_path):
    panel_server.commands.remember(GUS, "I grow chillies")
    huge = tmp_path / "far-too-big.json"
    huge.write_bytes(b'{"format": "mnemo-export", "version": 2, "memories": [' + b" " * (20 * 1024 * 1024) + b"]}")

    with chromium() as driver:
        sign_in(driver, panel_server.sign_in_link(GUS))
        wait_for_cards(driver, ["I grow chillies"])
        driver.find_element(By.ID, "import-file").send_keys(str(huge))
        wait(driver).until(lambda d: d.find_element(By.ID, "notice").get_attribute("data-kind") == "error",
                           "the panel to show an error")
        shown = driver.find_element(By.ID, "notice").text
        shot(driver, "10-import-too-large")
        assert "too large" in shown, shown
        assert panel_server.contents(GUS) == ["I grow chillies"]


def test_the_panel_speaks_chinese_fits_a_phone_cancels_a_reminder_and_signs_out(panel_server):
    keyed = {"format": "mnemo-export", "version": 1,
             "memories": [{"id": 1, "type": "fact", "predicate": "likes_火锅", "content": "I like hotpot"}]}
    panel_server.commands.import_data(FANG, json.dumps(keyed).encode())
    panel_server.commands.add_reminder(FANG, "tomorrow 9am call mom")

    with chromium() as driver:
        sign_in(driver, panel_server.sign_in_link(FANG))
        wait_for_cards(driver, ["I like hotpot"])
        key = (By.CSS_SELECTOR, "[data-testid=memory-key-text]")
        assert driver.find_element(*key).text == "likes · 火锅"
        reminder = wait(driver).until(lambda d: d.find_element(By.CSS_SELECTOR, "[data-testid=reminder-card]"))
        assert reminder.find_element(By.CSS_SELECTOR, "[data-testid=reminder-content]").text == "call mom"

        by_id(driver, "lang-toggle").click()
        wait(driver).until(lambda d: d.find_element(By.ID, "add-memory").text == "添加")
        assert driver.find_element(By.ID, "memories-heading").text == "记忆"
        badge = (By.CSS_SELECTOR, "[data-testid=memory-type-badge]")  # the cards are drawn again, after the buttons
        wait(driver).until(seen.text_to_be_present_in_element(badge, "事实"), "the memory card was not redrawn in 中文")
        assert driver.find_element(*badge).text == "事实"
        assert driver.find_element(*key).text == "喜欢：火锅"  # the key reads in the panel's language too
        driver.refresh()  # the choice is remembered
        wait(driver).until(lambda d: d.find_element(By.ID, "clear-all").text == "全部清除")
        shot(driver, "10-chinese")

        driver.set_window_size(*PHONE)
        wait_for_cards(driver, ["I like hotpot"])
        assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        shot(driver, "11-phone")

        cancel = (By.CSS_SELECTOR, "[data-testid=reminder-cancel]")  # the reminders load apart from the memories
        wait(driver).until(seen.element_to_be_clickable(cancel)).click()
        pending = (By.CSS_SELECTOR, "[data-testid=reminder-cancel]:not([hidden])")
        wait(driver).until(lambda d: not d.find_elements(*pending))
        assert [item.status for item in panel_server.commands.list_reminders(FANG)] in ([], ["cancelled"])

        by_id(driver, "sign-out").click()
        wait(driver).until(seen.visibility_of_element_located((By.ID, "signed-out")))
        driver.refresh()  # the cookie is gone, not just the screen
        wait(driver).until(seen.visibility_of_element_located((By.ID, "signed-out")))
        assert driver.find_element(By.CSS_SELECTOR, "#signed-out h2").text == "尚未登录"
        shot(driver, "12-signed-out")
        assert page_errors(driver) == []


def test_a_second_users_browser_sees_only_their_own_memories(panel_server):
    chens = panel_server.commands.remember(CHEN, "Chen's spare key is under the mat")
    panel_server.commands.remember(BOB, "Bob plays the cello")

    with chromium() as chen, chromium() as bob:
        sign_in(chen, panel_server.sign_in_link(CHEN))
        sign_in(bob, panel_server.sign_in_link(BOB))
        wait_for_cards(chen, ["Chen's spare key is under the mat"])
        wait_for_cards(bob, ["Bob plays the cello"])
        shot(bob, "20-second-user")

        status = bob.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch('/api/v1/memory/long-term/' + arguments[0], {credentials: 'same-origin'})"
            ".then((r) => done(r.status));", chens.id)
        assert status == 404
        assert panel_server.contents(CHEN) == ["Chen's spare key is under the mat"]


def round_lines(driver: WebDriver) -> list[str]:
    return [card.find_element(By.CSS_SELECTOR, "[data-testid=round-line]").text
            for card in driver.find_elements(By.CSS_SELECTOR, "#round-list [data-testid=round-card]")]


def test_the_conversation_card_lists_searches_and_forgets_what_was_said(panel_server):
    gao = Caller("telegram", "9191", display_name="Gao")
    said = {"format": "mnemo-export", "version": 2, "turns": [
        {"id": 1, "role": "user", "text": "I adopted a greyhound", "created_at": "2026-01-02T10:00:00+00:00"},
        {"id": 2, "role": "assistant", "text": "Greyhounds are gentle <souls>.", "reply_to": 1,
         "created_at": "2026-01-02T10:00:05+00:00"},
        {"id": 3, "role": "user", "text": "Any film tonight?", "created_at": "2026-01-03T10:00:00+00:00"},
        {"id": 4, "role": "assistant", "text": "Try Spirited Away.", "reply_to": 3,
         "created_at": "2026-01-03T10:00:05+00:00"}]}
    panel_server.commands.import_data(gao, json.dumps(said).encode())

    with chromium() as driver:
        sign_in(driver, panel_server.sign_in_link(gao))
        wait(driver).until(lambda d: round_lines(d) == ["Any film tonight?", "I adopted a greyhound"])
        assert driver.find_element(By.ID, "round-total").text == "2 exchanges"
        shot(driver, "30-conversation")

        box = by_id(driver, "round-search")
        box.send_keys("gentle")  # the bot's side is searched too
        wait(driver).until(lambda d: round_lines(d) == ["I adopted a greyhound"])
        card = driver.find_element(By.CSS_SELECTOR, "#round-list [data-testid=round-card]")
        assert card.find_element(By.CSS_SELECTOR, "[data-testid=round-reply]").text == "Greyhounds are gentle <souls>."
        card.find_element(By.CSS_SELECTOR, "[data-testid=round-delete]").click()
        confirm(driver)
        wait(driver).until(seen.visibility_of_element_located((By.ID, "round-empty")))
        left = json.loads(panel_server.commands.export_data(gao).data)["turns"]
        assert [turn["text"] for turn in left] == ["Any film tonight?", "Try Spirited Away."]
        shot(driver, "31-round-forgotten")
        assert page_errors(driver) == []


def test_the_recycle_bin_shows_what_the_rules_set_aside_and_restore_brings_it_back(panel_server):
    kept = panel_server.commands.remember(HUGO, "I grew up by the sea")
    binned = panel_server.commands.remember(HUGO, "liked the song on the radio")
    with panel_server.commands.uow_factory() as uow:
        uow.memories.get(uow.users.identify(HUGO.platform, HUGO.platform_user_id).user_id, binned.id).deleted_at = (
            binned.created_at)  # as the 90-day rule does
        uow.commit()

    with chromium() as driver:
        sign_in(driver, panel_server.sign_in_link(HUGO))
        wait_for_cards(driver, [kept.content])
        restore = (By.CSS_SELECTOR, "[data-testid=forgotten-restore]")
        content = wait(driver).until(lambda d: d.find_element(By.CSS_SELECTOR, "[data-testid=forgotten-content]"))
        assert content.text == "liked the song on the radio"
        shot(driver, "20-recycle-bin")
        wait(driver).until(seen.element_to_be_clickable(restore)).click()
        wait(driver).until(seen.visibility_of_element_located((By.ID, "forgotten-empty")))
        wait_for_cards(driver, [binned.content, kept.content])
        assert page_errors(driver) == []
    assert panel_server.commands.forgotten_memories(HUGO).total == 0


def test_the_time_zone_is_set_in_the_panel_and_reminders_show_on_its_clock_not_the_browsers(panel_server):
    ivy = Caller("telegram", "9494", display_name="Ivy")
    panel_server.commands.add_reminder(ivy, "tomorrow 8:30am take the bins out")
    panel_server.commands.add_reminder(ivy, "tomorrow 5pm the essay is due")

    def due_texts(driver: WebDriver) -> list[str]:
        return [card.text for card in driver.find_elements(By.CSS_SELECTOR, "[data-testid=reminder-due]")]

    with chromium() as driver:
        driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "America/Lima"})  # the browser's own
        sign_in(driver, panel_server.sign_in_link(ivy))
        current = (By.ID, "zone-current")
        wait(driver).until(seen.text_to_be_present_in_element(current, "You have not set a time zone"))
        wait(driver).until(lambda d: len(due_texts(d)) == 2)
        assert due_texts(driver)[0].endswith("8:30 AM (UTC)")  # its own clock, not Lima's 3:30 AM

        field = by_id(driver, "zone-input")
        field.send_keys("Narnia")
        by_id(driver, "zone-save").click()
        wait(driver).until(seen.text_to_be_present_in_element((By.ID, "notice"), "does not know that time zone"))
        field.clear()
        field.send_keys("Taipei")
        by_id(driver, "zone-save").click()
        wait(driver).until(seen.text_to_be_present_in_element(current, "Your time zone: Asia/Taipei (UTC+08:00)."))
        wait(driver).until(lambda d: due_texts(d)[0].endswith("8:30 AM (Asia/Taipei)"), "the reminder kept its clock")
        assert "2 pending reminders keep their clock time" in driver.find_element(By.ID, "notice").text
        essay = driver.find_elements(By.CSS_SELECTOR, "[data-testid=reminder-card]")[1]
        assert essay.find_element(By.CSS_SELECTOR, "[data-testid=reminder-due]").text.endswith("4:00 PM (Asia/Taipei)")
        assert essay.find_element(By.CSS_SELECTOR, "[data-testid=reminder-deadline]").text.endswith("5:00 PM")
        shot(driver, "13-time-zone")
        assert panel_server.commands.timezone(ivy).after.name == "Asia/Taipei"
        assert [f"{item.due_at:%H:%M}" for item in panel_server.commands.list_reminders(ivy)] == ["08:30", "16:00"]

        by_id(driver, "lang-toggle").click()
        wait(driver).until(seen.text_to_be_present_in_element(current, "你的时区：Asia/Taipei (UTC+08:00)。"))
        by_id(driver, "zone-reset").click()
        wait(driver).until(seen.text_to_be_present_in_element(current, "你还没有设置时区"))
        assert panel_server.commands.timezone(ivy).after.own is False
        assert page_errors(driver) == []
