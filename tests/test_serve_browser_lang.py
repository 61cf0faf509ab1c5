"""The page of ``wikigr serve`` in Russian and English in a real browser: headless Chromium from
Debian's packages driven by Selenium through the system's chromedriver (as
tests/test_serve_browser.py; these tests skip without them).

A Chromium whose languages are Russian gets the Russian page from the first paint and answers in
it; the switch on the page changes the language, by keyboard, and the choice outlives a reload.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_serve import QUESTION, TOKEN, running
from tests.test_serve_browser import CHROMEDRIVER, CHROMIUM, start_chromium, wait_for
from wikigr.serve.app import create_app
from wikigr.serve.http import STATIC

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs headless Chromium and its driver: apt-get install -y chromium chromium-driver",
)
RU = json.loads((STATIC / "i18n" / "ru.json").read_text("utf-8"))
EN = json.loads((STATIC / "i18n" / "en.json").read_text("utf-8"))


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[Callable[[str], Any]]:
    """Starts headless Chromium with the given browser languages (``ru``, ``en-US,en``), as
    its settings hold them: the Accept-Language it sends and ``navigator.languages``."""
    drivers: list[Any] = []

    def start(languages: str) -> Any:
        drivers.append(start_chromium(tmp_path, f"-{len(drivers)}", languages))
        return drivers[-1]

    try:
        yield start
    finally:
        for driver in drivers:
            driver.quit()


def _ready(driver: Any) -> None:
    wait_for(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "yes")


def _severe(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_a_russian_browser_gets_the_russian_page_and_an_answer(chromium: Any, built_pack: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser = chromium("ru-RU,ru")
    with running(create_app([built_pack])) as url:
        browser.get(url + "/")
        # the first paint: the words are in the page as served, before the script runs
        assert browser.execute_script("return document.documentElement.lang") == "ru"
        assert browser.find_element(By.ID, "ask").text == RU["form.ask"]
        _ready(browser)
        question = browser.find_element(By.ID, "question")
        assert question.get_attribute("placeholder") == RU["form.question_placeholder"]
        tabs = [tab.text for tab in browser.find_elements(By.CSS_SELECTOR, '#tabs [role="tab"]')]
        views = [tab.text for tab in browser.find_elements(By.CSS_SELECTOR, '#views [role="tab"]')]
        assert views == [RU["views.ask"], RU["views.build"], RU["views.compare"], RU["views.settings"]]
        assert tabs == [RU["tabs.trace"], RU["tabs.graph"], RU["tabs.eval"], RU["tabs.pack"]]
        options = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#pack option")]
        assert options == ["fixture (4 статьи, 11 фрагментов)"]
        pressed = browser.find_element(By.CSS_SELECTOR, 'button[aria-pressed="true"]')
        assert pressed.get_attribute("data-lang") == "ru"

        question.send_keys(QUESTION, Keys.ENTER)
        wait_for(browser, lambda d: d.execute_script("return document.body.dataset.answered"))
        answer = browser.find_element(By.ID, "answer").text
        assert "settimeout" in answer and "[1]" in answer  # the documents' words, as they are
        status = browser.find_element(By.ID, "status").text
        assert status.startswith("Ответ за ") and " с (трассировка " in status, status
        meta = browser.find_element(By.ID, "answer-meta").text
        assert meta.startswith("профиль ") and "уверенность 0," in meta, meta  # a decimal comma
        assert "ответ: из текста" in meta
        chart = " ".join(t.text for t in browser.find_elements(By.CSS_SELECTOR, "#trace-chart svg text"))
        assert " мс" in chart and "всего" in chart

        browser.find_element(By.ID, "tab-pack").click()
        info = wait_for(browser, lambda d: d.find_element(By.ID, "pack-info").text)
        assert "4 статьи" in info and "11 фрагментов" in info and "граф сущностей" in info, info
        browser.find_element(By.ID, "tab-graph").click()
        nodes = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#graph svg g.node.entity"))
        nodes[0].send_keys(Keys.ENTER)
        detail = browser.find_element(By.ID, "graph-detail").text
        assert detail.startswith("сущность: ") and RU["graph.explore"] in detail
        assert _severe(browser) == []  # the inline table broke no rule of the page's CSP


def test_the_switch_changes_the_language_and_the_choice_stays(chromium: Any, built_pack: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser = chromium("en-US,en")
    with running(create_app([built_pack])) as url:
        browser.get(url + "/")
        _ready(browser)
        assert browser.execute_script("return document.documentElement.lang") == "en"
        assert browser.find_element(By.ID, "ask").text == EN["form.ask"]
        group = browser.find_element(By.CSS_SELECTOR, ".langs")
        assert group.get_attribute("role") == "group"
        assert group.get_attribute("aria-label") == EN["lang.switch"]

        # by keyboard: Tab from the page's first link (skip to the question) reaches the switch,
        # Enter presses it
        browser.execute_script("document.querySelector('a.skip').focus()")
        for _ in range(4):
            if browser.switch_to.active_element.get_attribute("data-lang") == "ru":
                break
            ActionChains(browser).send_keys(Keys.TAB).perform()
        russian = browser.switch_to.active_element
        assert russian.get_attribute("data-lang") == "ru" and russian.text == "Русский"
        russian.send_keys(Keys.ENTER)
        wait_for(browser, lambda d: d.execute_script("return document.documentElement.lang") == "ru")
        _ready(browser)
        assert browser.find_element(By.ID, "ask").text == RU["form.ask"]
        assert browser.get_cookie("wikigr_lang")["value"] == "ru"

        browser.refresh()  # the choice outlives a reload, though the browser asks for English
        _ready(browser)
        assert browser.execute_script("return document.documentElement.lang") == "ru"
        assert browser.find_element(By.CSS_SELECTOR, "#answer .hint").text == RU["answer.hint"]

        browser.find_element(By.CSS_SELECTOR, 'button[data-lang="en"]').click()
        wait_for(browser, lambda d: d.execute_script("return document.documentElement.lang") == "en")
        _ready(browser)
        assert browser.find_element(By.ID, "ask").text == EN["form.ask"]
        browser.refresh()
        _ready(browser)
        assert browser.find_element(By.ID, "ask").text == EN["form.ask"]
        assert _severe(browser) == []


def test_the_sign_in_page_in_russian(chromium: Any, built_pack: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser = chromium("ru")
    with running(create_app([built_pack], token=TOKEN, loopback=False)) as url:
        browser.get(url + "/")
        wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
        assert browser.execute_script("return document.documentElement.lang") == "ru"
        assert browser.title == RU["login.title"]
        assert browser.find_element(By.CSS_SELECTOR, "#login-form button").text == RU["login.submit"]
        token = browser.find_element(By.ID, "token")
        assert token.get_attribute("placeholder") == RU["login.placeholder"]
        intro = browser.find_element(By.CSS_SELECTOR, "main p").text
        assert intro.startswith("Этому серверу нужен")
        codes = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "main p code")]
        assert codes == ["wikigr serve --token", "--token-file"]
        token.send_keys(TOKEN, Keys.ENTER)
        ask = wait_for(browser, lambda d: d.find_elements(By.ID, "ask"))  # signed in: the page, in Russian
        assert ask[0].text == RU["form.ask"]
        _ready(browser)
