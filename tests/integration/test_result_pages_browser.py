"""The result pages in a real browser: Debian's Chromium driven by Playwright, on the real stack.

Playwright drives the system browser (``executable_path``); its own browser download is never used.
``SHOAL_SCREENSHOT_DIR`` set: the pages' screenshots are written there (``docs/screenshots``).
"""

import os

import pytest

from scripts.browser import CHROMIUM, launch, serious_violations

from .result_pages import iris_job, iris_session

pytestmark = pytest.mark.integration

#: The drawn points and cluster traces of the map, read from plotly's graph div.
READ_MAP = """() => {
  const div = document.getElementById('map');
  const clusters = div.data.filter(t => t.meta === 'cluster');
  return {points: clusters.reduce((n, t) => n + t.x.length, 0), clusters: clusters.length,
          constraints: div.data.filter(t => t.meta === 'constraint').map(t => t.name),
          rendered: div.querySelectorAll('.scatterlayer .point').length};
}"""


#: The element with the focus: what it is and whether a focus indicator is drawn around it.
FOCUSED = """() => {
  const e = document.activeElement, s = getComputedStyle(e);
  let shown = 1;
  for (let a = e; a && a.nodeType === 1; a = a.parentElement) { shown *= Number(getComputedStyle(a).opacity); }
  const again = e === window.__firstFocused;
  window.__firstFocused = window.__firstFocused || e;
  return {tag: e.tagName.toLowerCase(), id: e.id, cls: String(e.className), text: (e.textContent || '').trim(), again,
          shown, outline: s.outline, ring: shown > 0.5 && ((s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2) || s.boxShadow !== 'none')};
}"""


def _tab_through(page):
    """Press Tab from the top of the page until the focus leaves its last control: every control reached,
    each of which must show a focus ring."""
    page.evaluate("() => { document.activeElement.blur(); window.scrollTo(0, 0); window.__firstFocused = null; }")
    seen = []
    for _ in range(200):
        page.keyboard.press("Tab")
        f = page.evaluate(FOCUSED)
        if f["tag"] == "body" or f["again"]:
            break
        seen.append(f)
    assert seen, "no control takes the focus"
    assert [f for f in seen if not f["ring"]] == [], [(f["cls"], f["shown"], f["outline"]) for f in seen if not f["ring"]]
    return seen


def _keyboard_to_row(page, row, name):
    """Name ``row`` in the row box by keyboard alone: the panel shows it and its heading takes the focus;
    Tab then Enter on its first neighbour shows that one. Returns the neighbour's name."""
    for _ in range(100):
        if page.evaluate("document.activeElement.id") == "row-input":
            break
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "row-input"
    page.keyboard.type(str(row))
    page.keyboard.press("Enter")
    page.wait_for_function("t => document.activeElement.matches('#panel h2') && "
                           "document.activeElement.textContent.includes(t)", arg=name)
    page.keyboard.press("Tab")
    neighbour = page.evaluate(FOCUSED)
    assert "row-link" in neighbour["cls"] and neighbour["ring"], neighbour
    page.keyboard.press("Enter")
    page.wait_for_function("t => document.activeElement.matches('#panel h2') && "
                           "document.activeElement.textContent.startsWith(t + ' ')", arg=neighbour["text"])
    return neighbour["text"]


@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api

    assert os.path.exists(CHROMIUM), "no chromium: scripts/bootstrap.sh installs Debian's (as root)"
    with sync_api.sync_playwright() as p:
        b = launch(p)
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
    # keyboard alone: every control takes a visible focus, and any row reaches the panel
    reached = _tab_through(page)
    controls = [f for f in reached if "modebar-btn" not in f["cls"]]  # after plotly's tool buttons
    assert [f["id"] for f in controls[:2]] == ["row-input", ""] and controls[1]["text"] == "Show", [(f["tag"], f["cls"], f["text"][:20]) for f in reached]
    assert sum("row-link" in f["cls"] for f in reached) == page.locator("button.row-link").count() >= 3
    _keyboard_to_row(page, 17, "iris-17")
    assert page.locator("#panel tbody tr").count() == 4
    page.locator("button.row-link").first.click()
    page.wait_for_selector("#panel table")
    assert page.locator("#panel tbody tr").count() == 4  # iris's 4 columns
    assert page.locator("#panel ul.neighbours li").count() == 5
    page.locator("#map .scatterlayer .point").nth(10).click(force=True)
    page.wait_for_function("() => document.querySelector('#panel h2').textContent.includes('iris-')")
    _shoot(page, "result-job.png")
    assert serious_violations(page) == []
    page.locator("#row-input").fill("iris-151")
    page.keyboard.press("Enter")
    assert page.locator("#row-error").text_content().startswith("No such row")
    assert page.locator("#row-input").get_attribute("aria-invalid") == "true"
    assert problems == []
    page.close()


def test_the_session_page_draws_the_model_and_each_pass(live, browser):
    sid, _ = iris_session(live, rounds=4)
    page, problems = _open(browser, f"{live}/ui/sessions/{sid}")
    drawn = page.evaluate(READ_MAP)
    assert drawn["points"] == 150 and drawn["clusters"] >= 3, drawn
    passes = page.evaluate("() => document.getElementById('passes').data.map(t => t.y.length)")
    assert passes[0] == passes[1] >= 4
    reached = _tab_through(page)  # the row box, the samples and the rows of the questions in flight
    assert sum("row-link" in f["cls"] for f in reached) == page.locator("button.row-link").count()
    assert page.locator("section.two button.row-link").count() >= 2
    _keyboard_to_row(page, 42, "iris-42")
    page.locator("button.row-link").first.click()
    page.wait_for_selector("#panel table")
    _shoot(page, "result-session.png")
    assert serious_violations(page) == []
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


def test_the_page_of_an_unfinished_job_waits_then_shows_its_end(live, browser):
    """A QUEUED job's page (a record no worker has been sent: it waits for the test) asks again by itself
    and reloads once the job has ended; both pages pass axe-core."""
    from bench.datasets import load
    from workers.config import Settings
    from workers.store import Store

    from .helpers import upload

    X, _ = load("iris")
    store = Store.from_settings(Settings.from_env())  # the live stack's Redis
    jid = store.create_job(dataset_id=upload(live, X), method="copkmeans", n_clusters=3, params={},
                           constraints={}, random_state=0)["id"]
    page = browser.new_page()
    problems = []
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    loads = []
    page.on("load", lambda: loads.append(page.url))
    assert page.goto(f"{live}/ui/jobs/{jid}").status == 200
    assert "is QUEUED" in page.inner_text("h1")
    assert serious_violations(page) == []
    page.wait_for_timeout(2500)  # Retry-After is 1 s: asked twice, nothing changed, no reload
    assert len(loads) == 1
    store.finish_job(jid, "FAILED", error={"detail": "stopped by the test"})
    page.wait_for_function("() => document.querySelector('h1').textContent.includes('is FAILED')", timeout=10000)
    assert len(loads) == 2 and "stopped by the test" in page.inner_text("main")
    assert page.locator("#waiting").count() == 0 and serious_violations(page) == []
    assert problems == []
    page.close()
