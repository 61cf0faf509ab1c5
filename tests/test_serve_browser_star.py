"""The OpenML star on the page's Graph tab, in a real browser: headless Chromium from Debian's
packages driven by Selenium through the system's chromedriver (as tests/test_serve_browser.py;
this test skips without them), on a copy of ``packs/amlb2019``.

Before a question the tab shows the pack's star schema; after an aggregate question, the star
behind the answer — its facts, the algorithms, families, datasets, tasks and dates of their runs —
whose nodes answer a click or Enter with their detail, and a member's runs on *explore*.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.test_serve import running
from tests.test_serve_browser import CHROMEDRIVER, CHROMIUM, png_pixels, start_chromium, wait_for
from tests.test_serve_star import AGGREGATE, AMLB, STAR_KINDS
from wikigr.serve.app import create_app

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs headless Chromium and its driver: apt-get install -y chromium chromium-driver",
)


def _labels(driver: Any, selector: str) -> list[str]:
    """The labels of the nodes ``selector`` picks, read at once (the picture may be redrawn)."""
    script = "return [...document.querySelectorAll(arguments[0])].map((n) => n.getAttribute('aria-label'))"
    return list(driver.execute_script(script, selector))


def _kinds(driver: Any) -> set[str]:
    script = "return [...document.querySelectorAll('#graph g.node')].map((n) => n.classList[1])"
    return set(driver.execute_script(script))


def _settled(driver: Any) -> bool:
    """The picture drawn and still (a click lands where the node is)."""
    return bool(driver.execute_script("return graph.nodes.length > 0 && graph.frame === 0"))


def test_the_star_behind_an_aggregate_answer_in_the_page(tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    pack = tmp_path / "amlb2019"
    shutil.copytree(AMLB, pack)
    browser = start_chromium(tmp_path)
    try:
        with running(create_app([pack])) as url:
            browser.get(url + "/")
            wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
            assert browser.find_element(By.CSS_SELECTOR, "#pack option").text == "amlb2019 (6,442 runs)"

            # before a question: the star schema, the six tables with their rows
            browser.find_element(By.ID, "tab-graph").click()
            wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#graph g.node")) == 6)
            assert _kinds(browser) == STAR_KINDS
            labels = {t.text for t in browser.find_elements(By.CSS_SELECTOR, "#graph g.node text")}
            assert "Run (6,442)" in labels and len(browser.find_elements(By.CSS_SELECTOR, "#graph line")) == 6
            assert "star schema" in browser.find_element(By.CSS_SELECTOR, "#graph .star-about").text

            # an aggregate question: the star behind its answer
            browser.find_element(By.ID, "question").send_keys(AGGREGATE, Keys.ENTER)
            wait_for(browser, lambda d: d.execute_script("return document.body.dataset.answered"))
            assert "random_forest" in browser.find_element(By.ID, "answer").text
            wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#graph g.node.fact.focus"))
            wait_for(browser, _settled)
            assert _kinds(browser) == STAR_KINDS
            facts = browser.find_elements(By.CSS_SELECTOR, "#graph g.node.fact")
            assert _labels(browser, "#graph g.node.fact") == [
                "fact (runs): random_forest",
                "fact (runs): automl",
                "fact (runs): baseline",
            ]
            legend = browser.find_element(By.CSS_SELECTOR, "#graph .legend").text
            assert all(
                word in legend for word in ("fact (runs)", "algorithm family", "dataset", "task", "date")
            )

            # a click on a fact: its runs, statistic, best run and the source that cites it
            ActionChains(browser).move_to_element(
                facts[0].find_element(By.TAG_NAME, "circle")
            ).click().perform()
            wait_for(browser, lambda d: d.find_element(By.ID, "graph-detail").text.startswith("fact (runs)"))
            detail = browser.find_element(By.ID, "graph-detail").text
            assert detail.startswith("fact (runs): random_forest") and "460 runs on 23 datasets" in detail
            assert "mean auc: 0.870" in detail and "best run: amlb2019_runs:" in detail
            assert "filter: Algorithm.family = random_forest" in detail
            cited = browser.find_element(By.CSS_SELECTOR, "#graph-detail a[href='#source-1']")
            assert cited.text == "cited as [1]"

            # Enter on an algorithm: its runs, best score and explore; explore draws its runs
            algorithm = browser.find_element(
                By.CSS_SELECTOR, "#graph g.node.algorithm[aria-label^='algorithm: TPOT']"
            )
            algorithm.send_keys(Keys.ENTER)
            detail = browser.find_element(By.ID, "graph-detail").text
            assert detail.startswith("algorithm: TPOT 0.9.6") and "best auc: " in detail
            assert "runs" in detail and "filter: Algorithm.id = TPOT 0.9.6" in detail
            browser.find_element(By.CSS_SELECTOR, "#graph-detail button").click()
            wait_for(browser, lambda d: _labels(d, "#graph g.node.focus") == ["algorithm: TPOT 0.9.6"])
            assert (
                "The runs of one member" in browser.find_element(By.CSS_SELECTOR, "#graph .star-about").text
            )
            assert {"fact", "dataset", "family"} <= _kinds(browser)

            shot = tmp_path / "star.png"
            assert browser.save_screenshot(str(shot))
            failures = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
            assert [m for m in failures if "/graph" in m or "graph.js" in m] == [], failures
        pixels = png_pixels(shot.read_bytes())[..., :3]
        colours = np.unique(pixels.reshape(-1, 3), axis=0)
        for colour in ((122, 79, 208), (194, 65, 12), (15, 139, 141)):  # facts, datasets, algorithms
            assert (np.abs(colours.astype(int) - colour).sum(axis=1) < 12).any(), colour
    finally:
        browser.quit()
