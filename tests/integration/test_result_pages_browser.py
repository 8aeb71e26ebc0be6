"""The result pages in a real browser: Debian's Chromium driven by Playwright, on the real stack.

Playwright drives the system browser (``executable_path``); its own browser download is never used.
``SHOAL_SCREENSHOT_DIR`` set: the pages' screenshots are written there (``docs/screenshots``).
"""

import os
import shutil

import pytest

from .result_pages import iris_job, iris_session

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

#: The drawn points and cluster traces of the map, read from plotly's graph div.
READ_MAP = """() => {
  const div = document.getElementById('map');
  const clusters = div.data.filter(t => t.meta === 'cluster');
  return {points: clusters.reduce((n, t) => n + t.x.length, 0), clusters: clusters.length,
          constraints: div.data.filter(t => t.meta === 'constraint').map(t => t.name),
          rendered: div.querySelectorAll('.scatterlayer .point').length};
}"""


@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api

    assert os.path.exists(CHROMIUM), "no chromium: scripts/bootstrap.sh installs Debian's (as root)"
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def _open(browser, url):
    page = browser.new_page(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    r = page.goto(url)
    assert r.status == 200
    page.wait_for_function("() => { const d = document.getElementById('map'); return d && d.data; }")
    return page, problems


def _shoot(page, name):
    where = os.environ.get("SHOAL_SCREENSHOT_DIR")
    if where:
        os.makedirs(where, exist_ok=True)
        page.screenshot(path=os.path.join(where, name), full_page=True)


def test_the_job_page_draws_every_row_by_cluster_and_shows_a_clicked_row(live, browser):
    jid, y = iris_job(live)
    page, problems = _open(browser, f"{live}/ui/jobs/{jid}")
    drawn = page.evaluate(READ_MAP)
    assert drawn["points"] == 150 and drawn["clusters"] == 3 and drawn["rendered"] == 150, drawn
    assert any(n.startswith("must-link violated") for n in drawn["constraints"]), drawn
    assert any(n.startswith("cannot-link contradictory") for n in drawn["constraints"]), drawn
    page.locator("button.row-link").first.click()
    page.wait_for_selector("#panel table")
    assert page.locator("#panel tbody tr").count() == 4  # iris's 4 columns
    assert page.locator("#panel ul.neighbours li").count() == 5
    page.locator("#map .scatterlayer .point").nth(10).click(force=True)
    page.wait_for_function("() => document.querySelector('#panel h2').textContent.includes('iris-')")
    _shoot(page, "result-job.png")
    assert problems == []
    page.close()


def test_the_session_page_draws_the_model_and_each_pass(live, browser):
    sid, _ = iris_session(live, rounds=4)
    page, problems = _open(browser, f"{live}/ui/sessions/{sid}")
    drawn = page.evaluate(READ_MAP)
    assert drawn["points"] == 150 and drawn["clusters"] >= 3, drawn
    passes = page.evaluate("() => document.getElementById('passes').data.map(t => t.y.length)")
    assert passes[0] == passes[1] >= 4
    page.locator("button.row-link").first.click()
    page.wait_for_selector("#panel table")
    _shoot(page, "result-session.png")
    assert problems == []
    page.close()


def test_hostile_item_ids_and_names_are_shown_as_text(live, browser):
    hostile = ['<img src=x onerror=alert(1)>', '</script><script>alert(2)</script>', '<b>bold</b> & "q"']
    jid, _ = iris_job(live, name='<svg onload=alert(3)>', item_ids=[hostile[i % 3] + f" {i}" for i in range(150)])
    page, problems = _open(browser, f"{live}/ui/jobs/{jid}")
    assert page.evaluate(READ_MAP)["points"] == 150
    assert page.locator("img, svg script, b").count() == 0  # no element made from the strings
    assert page.locator(".main-svg .gtitle").text_content() == "spectral_learning on <svg onload=alert(3)>: 3 clusters"
    page.locator("button.row-link").first.click()
    page.wait_for_function("() => document.querySelector('#panel h2').textContent.includes(' ')")
    assert page.locator("#panel h2").text_content().split(" ")[0] in ("<img", "</script><script>alert(2)</script>",
                                                                      "<b>bold</b>")
    assert problems == []
    page.close()
