"""The page of ``wikigr serve`` in a real browser: headless Chromium from Debian's packages,
driven by Selenium through the system's chromedriver (nothing downloads a browser or a driver).

Without them these tests skip; install them with ``apt-get install -y chromium chromium-driver``.
"""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from tests.test_serve import QUESTION, TOKEN, running
from wikigr.serve.app import create_app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs headless Chromium and its driver: apt-get install -y chromium chromium-driver",
)
WAIT = 600  # seconds; the machine may be loaded (a wait on a condition: only a hang takes this long)


def png_pixels(data: bytes) -> np.ndarray:
    """An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium's screenshots are) as a
    (height, width, channels) array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, bytearray(), b""
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, "an unexpected PNG layout"
    bpp = 3 if colour == 2 else 4
    stride = width * bpp
    raw = zlib.decompress(bytes(idat))
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int64)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=start + 1).astype(np.int64)
        if kind == 0:  # None
            row = line
        elif kind == 1:  # Sub: each byte plus the one a pixel to its left
            row = line.reshape(-1, bpp).cumsum(axis=0).reshape(-1) & 255
        elif kind == 2:  # Up
            row = (line + prev) & 255
        else:  # Average, Paeth: byte by byte
            done = [0] * stride
            current, above = line.tolist(), prev.tolist()
            for i in range(stride):
                a = done[i - bpp] if i >= bpp else 0
                b = above[i]
                if kind == 3:
                    done[i] = (current[i] + ((a + b) >> 1)) & 255
                else:
                    c = above[i - bpp] if i >= bpp else 0
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    done[i] = (current[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            row = np.array(done, dtype=np.int64)
        out[y] = row
        prev = row
    return out.reshape(height, width, bpp)


@pytest.fixture(scope="module")
def evaluated_pack(built_pack: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture pack with two profiles evaluated on two questions."""
    from wikigr.eval.runner import EvalOptions, evaluate

    pack = tmp_path_factory.mktemp("browser") / "fixture"
    shutil.copytree(built_pack, pack)
    (pack / "eval").mkdir(exist_ok=True)
    questions = [
        {"id": "q1", "question": QUESTION, "gold_sources": ["Sockets guide"]},
        {"id": "q2", "question": "How deep are tomato seeds sown?", "gold_sources": ["Growing tomatoes"]},
    ]
    (pack / "eval" / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    evaluate(pack, EvalOptions(profiles=["baseline", "balanced"], ks=(1, 5)))
    return pack


def start_chromium(folder: Path, name: str = "", languages: str | None = None) -> Any:
    """Headless Chromium on loopback only, its profile and driver log in ``folder`` (``name``
    tells several apart); ``languages`` (``ru``, ``en-US,en``): the browser's languages, as its
    settings hold them (the Accept-Language it sends and ``navigator.languages``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1366,900",
        f"--user-data-dir={folder / f'profile{name}'}",
        *([f"--lang={languages.split(',')[0]}"] if languages else []),
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",  # nothing beyond loopback
    ):
        options.add_argument(argument)
    if languages:
        options.add_experimental_option("prefs", {"intl.accept_languages": languages})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=str(CHROMEDRIVER), log_output=str(folder / f"chromedriver{name}.log"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(WAIT)
    return driver


def wait_for(driver: Any, condition: Any) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT).until(condition)


def _errors_in_console(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_ask_read_the_answer_sources_trace_graph_and_evaluations(
    browser: Any, evaluated_pack: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with running(create_app([evaluated_pack])) as url:
        browser.get(url + "/")
        wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
        assert browser.switch_to.active_element.get_attribute("id") == "question"  # ready to type
        options = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#pack option")]
        assert options == ["fixture (4 articles, 11 chunks)"]

        question = browser.find_element(By.ID, "question")
        question.send_keys(QUESTION, Keys.ENTER)  # the form submits with Enter
        trace_id = wait_for(browser, lambda d: d.execute_script("return document.body.dataset.answered"))

        answer = browser.find_element(By.ID, "answer").text
        assert "settimeout" in answer and "[1]" in answer  # the short answer cites its source
        sources = browser.find_elements(By.CSS_SELECTOR, "#sources > li")
        assert sources and sources[0].text.startswith("Sockets guide")
        citation = browser.find_element(By.CSS_SELECTOR, "#answer a.cite")
        assert citation.get_attribute("href").endswith("#source-1")

        record = httpx.get(f"{url}/api/v1/traces/{trace_id}").json()
        stages = record["response"]["trace"]["stages"]
        bars = browser.find_elements(By.CSS_SELECTOR, "#trace-chart svg rect")
        assert len(bars) == len(stages) > 3
        labels = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#trace-chart svg text")]
        assert [s["stage"] for s in stages] == [
            label for label in labels if label in {s["stage"] for s in stages}
        ]

        # The tabs by keyboard: from Trace, the right arrow opens the graph.
        browser.find_element(By.ID, "tab-trace").click()
        browser.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
        assert browser.find_element(By.ID, "tab-graph").get_attribute("aria-selected") == "true"
        assert browser.find_element(By.ID, "panel-graph").is_displayed()
        nodes = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#graph svg g.node"))
        kinds = {n.get_attribute("class").split()[1] for n in nodes}
        assert kinds == {"chunk", "article", "entity"} and len(
            browser.find_elements(By.CSS_SELECTOR, "#graph line")
        )
        entity = next(n for n in nodes if "entity" in n.get_attribute("class"))
        entity.send_keys(Keys.ENTER)  # nodes are focusable; Enter shows what they are
        detail = browser.find_element(By.ID, "graph-detail").text
        assert detail.startswith("entity: ") and "explore around this entity" in detail
        browser.find_element(By.CSS_SELECTOR, "#graph-detail button").click()
        wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#graph g.node.focus")) == 1)

        browser.find_element(By.ID, "tab-eval").click()
        profiles = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#eval-chart svg text")]
        assert "baseline" in profiles and "balanced" in profiles and "hit@5" in profiles
        assert len(browser.find_elements(By.CSS_SELECTOR, "#eval-chart svg rect")) > 4
        browser.find_element(By.ID, "tab-pack").click()
        info = browser.find_element(By.ID, "pack-info").text
        assert "Sockets guide" in info and "4 articles" in info

        browser.find_element(By.ID, "tab-graph").click()
        shot = tmp_path / "page.png"
        assert browser.save_screenshot(str(shot))
        assert _errors_in_console(browser) == []
    pixels = png_pixels(shot.read_bytes())[..., :3]
    assert pixels.shape[1] >= 1200
    assert pixels.std() > 10  # not blank: text, bars and a graph on the page
    colours = np.unique(pixels.reshape(-1, 3), axis=0)
    assert len(colours) > 200
    for colour in ((47, 111, 214), (46, 158, 91), (224, 123, 26)):  # passages, pages, entities
        assert (np.abs(colours.astype(int) - colour).sum(axis=1) < 12).any(), colour


def test_an_error_is_shown_in_one_line(browser: Any, built_pack: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with running(create_app([built_pack])) as url:
        browser.get(url + "/")
        wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
        browser.execute_script("document.getElementById('profile').add(new Option('bogus', 'bogus'))")
        browser.find_element(By.ID, "profile").send_keys("bogus")
        browser.find_element(By.ID, "question").send_keys(QUESTION, Keys.ENTER)
        status = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#status.error").text)
        assert status == "unknown profile 'bogus' (profiles: auto, baseline, balanced, max, graph, routed)"


def test_with_a_token_the_page_signs_in_first(browser: Any, built_pack: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with running(create_app([built_pack], token=TOKEN, loopback=False)) as url:
        browser.get(url + "/")
        token = wait_for(browser, lambda d: d.find_element(By.ID, "token"))
        token.send_keys("not-the-token-at-all", Keys.ENTER)
        wait_for(browser, lambda d: d.find_element(By.ID, "status").text == "wrong token")
        browser.find_element(By.ID, "token").clear()
        browser.find_element(By.ID, "token").send_keys(TOKEN, Keys.ENTER)
        wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
        assert browser.find_element(By.CSS_SELECTOR, "#pack option").text.startswith("fixture")
        cookie = browser.get_cookie("wikigr_token")
        assert cookie is not None and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
