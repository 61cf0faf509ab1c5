"""The Build view of ``wikigr serve``'s page in a real headless Chromium (tests/test_serve_browser.py
has the browser): a pack built from a loopback site, followed to its end and asked; a build
cancelled; a pack removed after a confirmation; and a write from a page of another origin refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.httpserver import LocalServer
from tests.test_serve import QUESTION, running
from tests.test_serve_browser import CHROMEDRIVER, CHROMIUM, wait_for
from tests.test_serve_build import PAGES, blocking, leftovers
from wikigr.serve.app import create_app

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs headless Chromium and its driver: apt-get install -y chromium chromium-driver",
)


def _state(driver: Any) -> str | None:
    state: str | None = driver.execute_script("return document.body.dataset.buildState || null")
    return state


def test_build_a_pack_from_the_page_ask_it_cancel_a_build_and_remove_it(
    browser: Any, wikigr_home: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with LocalServer() as site, running(create_app([])) as url:
        for path, body in PAGES.items():
            site.add(path, body)
        site.add("/foreign.html", "<h1>another origin</h1>")
        browser.get(url + "/")
        wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
        browser.find_element(By.ID, "view-tab-build").click()
        wait_for(browser, lambda d: d.execute_script("return document.body.dataset.buildReady") == "yes")
        assert browser.find_element(By.ID, "build-packs").text == "No pack yet."

        # Build from two URLs and watch it to its end.
        browser.find_element(By.ID, "build-name").send_keys("guide")
        browser.find_element(By.ID, "build-urls").send_keys("\n".join(site.url(p) for p in PAGES))
        browser.find_element(By.ID, "build-graph").click()  # no entity graph: quicker
        browser.find_element(By.ID, "build-submit").click()
        wait_for(browser, lambda d: _state(d) == "done")
        status = browser.find_element(By.ID, "build-status").text
        assert status == "Done: guide, 2 articles, 2 passages.", status
        stages = [
            li.get_attribute("data-stage")
            for li in browser.find_elements(By.CSS_SELECTOR, "#build-progress li")
        ]
        assert {"fetch", "embed", "write"} <= set(stages)
        fetched = browser.find_element(By.CSS_SELECTOR, '#build-progress li[data-stage="fetch"]').text
        assert "fetched and parsed" in fetched and "2 of 2" in fetched
        assert "guide" in browser.find_element(By.ID, "build-packs").text
        assert [
            o.get_attribute("textContent") for o in browser.find_elements(By.CSS_SELECTOR, "#pack option")
        ] == ["guide (2 articles, 2 chunks)"]

        profiles = [
            o.get_attribute("value") for o in browser.find_elements(By.CSS_SELECTOR, "#profile option")
        ]
        assert len(profiles) == len(set(profiles)) > 3  # the lists loaded again, not appended to

        # The pack is asked at once.
        browser.find_element(By.ID, "view-tab-ask").click()
        browser.find_element(By.ID, "question").send_keys(QUESTION, Keys.ENTER)
        wait_for(browser, lambda d: d.execute_script("return document.body.dataset.answered"))
        assert browser.find_elements(By.CSS_SELECTOR, "#sources > li")[0].text.startswith("Sockets guide")

        # A build cancelled while it fetches leaves nothing behind.
        release = blocking(site, "/docs/slow.html", "<h1>Slow page</h1><p>It answers late.</p>")
        browser.find_element(By.ID, "view-tab-build").click()
        browser.find_element(By.ID, "build-name").clear()
        browser.find_element(By.ID, "build-name").send_keys("slow")
        urls = browser.find_element(By.ID, "build-urls")
        urls.clear()
        urls.send_keys(site.url("/docs/files.html") + "\n" + site.url("/docs/slow.html"))
        browser.find_element(By.ID, "build-submit").click()
        wait_for(browser, lambda d: "1 of 2" in d.find_element(By.ID, "build-progress").text)
        first = browser.current_window_handle
        browser.switch_to.new_window("tab")  # another reader of the page sees the build, and cancels it
        browser.get(url + "/")
        wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
        browser.find_element(By.ID, "view-tab-build").click()
        wait_for(browser, lambda d: "1 of 2" in d.find_element(By.ID, "build-progress").text)
        assert browser.find_element(By.ID, "build-job-title").text == "Building slow"
        browser.find_element(By.ID, "build-cancel").click()
        wait_for(browser, lambda d: d.find_element(By.ID, "build-status").text == "Cancelling…")
        release.set()
        wait_for(browser, lambda d: _state(d) == "cancelled")
        browser.close()
        browser.switch_to.window(first)
        wait_for(browser, lambda d: _state(d) == "cancelled")
        assert browser.find_element(By.ID, "build-status").text == "Cancelled: nothing was changed."
        assert not (wikigr_home / "packs" / "slow").exists() and leftovers(wikigr_home) == []

        # A pack from a file chosen in the page (uploaded, then built).
        notes = tmp_path / "Заметки.md"
        notes.write_text("# Tomatoes\n\nSow tomato seeds 6 mm deep in warm soil.\n", encoding="utf-8")
        browser.find_element(By.ID, "build-name").clear()
        browser.find_element(By.ID, "build-name").send_keys("notes")
        browser.find_element(By.ID, "build-urls").clear()
        browser.find_element(By.ID, "build-files").send_keys(str(notes))
        assert browser.find_element(By.ID, "build-file-list").text.startswith("Заметки.md (1 KB)")
        browser.find_element(By.ID, "build-submit").click()
        wait_for(browser, lambda d: d.execute_script("return document.body.dataset.built") == "notes")
        assert browser.find_element(By.ID, "build-status").text == "Done: notes, 1 article, 1 passage."
        assert browser.find_element(By.ID, "build-file-list").text == ""  # sent: the list is emptied

        # A page of another origin (the site's) cannot make this server update the pack: its
        # POST (no-cors, no preflight) reaches the server, which refuses it.
        home = browser.current_window_handle
        browser.switch_to.new_window("tab")
        browser.get(site.url("/foreign.html"))
        sent = browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            f"fetch('{url}/api/v1/packs/guide/update', {{method: 'POST', mode: 'no-cors'}})"
            ".then(() => done('sent'), (e) => done(String(e)));"
        )
        assert sent == "sent"
        browser.close()
        browser.switch_to.window(home)
        assert [job["title"] for job in httpx.get(f"{url}/api/v1/jobs").json()["jobs"]] == [
            "build notes",
            "build slow",
            "build guide",
        ]

        # Remove, after a confirmation.
        browser.find_element(By.CSS_SELECTOR, '#build-packs button.remove[data-pack="guide"]').click()
        assert "Remove guide for good?" in browser.find_element(By.ID, "build-packs").text
        browser.find_element(By.CSS_SELECTOR, "#build-packs button.confirm-remove").click()
        wait_for(browser, lambda d: d.find_element(By.ID, "build-status").text == "Removed guide.")
        assert "guide" not in browser.find_element(By.ID, "build-packs").text
        assert not (wikigr_home / "packs" / "guide").exists()
        errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        refused = f"{url}/api/v1/packs/guide/update - Failed to load resource: "
        refused += "the server responded with a status of 403"
        others = [
            e for e in errors if not e.startswith(refused) and not e.startswith(site.url("/favicon.ico"))
        ]
        assert any(e.startswith(refused) for e in errors) and others == [], (
            errors
        )  # the refusal, and no error of ours
        shot = tmp_path / "build.png"
        assert browser.save_screenshot(str(shot))


def test_a_read_only_server_shows_no_write_controls(browser: Any, built_pack: Path) -> None:
    from selenium.webdriver.common.by import By

    with running(create_app([built_pack], read_only=True)) as url:
        browser.get(url + "/")
        wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
        browser.find_element(By.ID, "view-tab-build").click()
        wait_for(browser, lambda d: d.execute_script("return document.body.dataset.buildReady") == "yes")
        assert "read-only" in browser.find_element(By.ID, "build-read-only").text
        assert browser.find_elements(By.ID, "build-form") == []
        assert browser.find_elements(By.CSS_SELECTOR, "#build-packs button") == []
        assert "fixture" in browser.find_element(By.ID, "build-packs").text
