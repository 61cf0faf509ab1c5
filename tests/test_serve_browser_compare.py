"""The Compare and Settings views of the page in a real headless Chromium (as
tests/test_serve_browser.py): a comparison of two profiles run and its table read; the default
profile changed in Settings and the next answer on the Ask view using it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.test_serve import QUESTION, running
from tests.test_serve_browser import CHROMEDRIVER, CHROMIUM, start_chromium, wait_for
from tests.test_serve_compare import QUESTIONS, write_questions
from wikigr.serve.app import create_app

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs headless Chromium and its driver: apt-get install -y chromium chromium-driver",
)


def _ask(browser: Any, question: str) -> str:
    """Ask on the Ask view and wait for the answer; the answer's meta line."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    before = browser.execute_script("return document.body.dataset.answered || ''")
    browser.find_element(By.ID, "view-tab-ask").click()
    box = browser.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question, Keys.ENTER)
    answered = "return document.body.dataset.answered || ''"
    wait_for(browser, lambda d: d.execute_script(answered) not in ("", before))
    return str(browser.find_element(By.ID, "answer-meta").text)


def test_compare_two_profiles_then_change_the_default_profile(built_pack: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    write_questions(pack, QUESTIONS)
    browser = start_chromium(tmp_path)
    try:
        with running(create_app([pack])) as url:
            browser.get(url + "/")
            wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
            assert _ask(browser, QUESTION).startswith("profile auto")

            # Compare: two profiles, the table filled per profile, the matrix per question.
            browser.find_element(By.ID, "view-tab-compare").click()
            boxes = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#compare-profiles input"))
            for box in boxes:
                if box.is_selected() != (box.get_attribute("value") in ("baseline", "balanced")):
                    box.click()
            browser.find_element(By.ID, "compare-run").click()
            wait_for(browser, lambda d: d.execute_script("return document.body.dataset.compared") == "done")
            table = browser.find_element(By.ID, "compare-table")
            heads = [th.text for th in table.find_elements(By.CSS_SELECTOR, "tr:first-child th")]
            assert heads[:3] == ["profile", "scored / questions", "recall@1"] and "MRR" in heads
            assert "judge" in heads and "p50 latency" in heads
            rows = {
                tr.get_attribute("data-profile"): [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                for tr in table.find_elements(By.CSS_SELECTOR, "tr[data-profile]")
            }
            assert list(rows) == ["baseline", "balanced"]
            assert rows["baseline"][0] == "2/2" and rows["baseline"][heads.index("MRR") - 1] == "1.000"
            assert rows["baseline"][heads.index("judge") - 1] == "—"  # no Claude: no judge
            assert "±0.000" in rows["balanced"][heads.index("MRR") - 1]  # the delta against baseline
            matrix = browser.find_elements(By.CSS_SELECTOR, "#compare-matrix tr[data-question] td")
            assert [td.text for td in matrix] == ["✓"] * 4
            status = browser.find_element(By.ID, "compare-status").text
            assert status.startswith("Done: 2 profiles evaluated")
            results = sorted(p.name.split("-", 1)[1] for p in (pack / "eval" / "results").glob("*.json"))
            assert results == ["balanced.json", "baseline.json"]

            # Settings: the default profile changed, the next answer uses it.
            browser.find_element(By.ID, "view-tab-settings").click()
            wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#settings-profile option")) > 2)
            wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#settings-caches tr[data-cache]"))
            claude = browser.find_element(By.ID, "settings-claude").text
            assert "not configured" in claude
            Select(browser.find_element(By.ID, "settings-profile")).select_by_value("baseline")
            browser.find_element(By.ID, "settings-save").click()
            wait_for(browser, lambda d: d.execute_script("return document.body.dataset.settingsSaved"))
            assert browser.find_element(By.ID, "settings-status").text.startswith("Saved")
            assert json.loads((pack / "kg_config.json").read_text())["profile"] == "baseline"
            assert _ask(browser, QUESTION).startswith("profile baseline")

            # A refused save shows the validator's one line.
            filled = "return document.body.dataset.settingsShown"
            shown = browser.execute_script(filled)
            browser.find_element(By.ID, "view-tab-settings").click()  # the form filled again
            wait_for(browser, lambda d: d.execute_script(filled) != shown)
            browser.find_element(By.CSS_SELECTOR, "#settings-root details summary").click()
            raw = browser.find_element(By.ID, "settings-json")
            raw.clear()
            raw.send_keys('{"profile": "baseline", "colour": "blue"}')
            browser.find_element(By.ID, "settings-save-json").click()
            refused = "#settings-status.error"
            error = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, refused).text)
            assert error == "kg_config.json: colour: unknown field"
            assert json.loads((pack / "kg_config.json").read_text()) == {"profile": "baseline"}
            severe = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
            assert [m for m in severe if "400" not in m] == []  # the refused PUT, and nothing else
    finally:
        browser.quit()
