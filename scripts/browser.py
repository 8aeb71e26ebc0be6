"""Real Chromium for the annotator page tests and bench: Debian's browser driven by Playwright.

Playwright never downloads a browser here: it launches ``/usr/bin/chromium`` (``SHOAL_CHROMIUM``)
with the flags that work headless as root in a container.
"""

import os
import time

CHROMIUM = os.environ.get("SHOAL_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage"]
PAIR_KEYS = {"must_link": "1", "cannot_link": "2", "dont_know": "3"}
PAIR_LETTERS = {"must_link": "s", "cannot_link": "d", "dont_know": "k"}
TRIPLET_KEYS = {"yes": "1", "no": "2", "dont_know": "3"}
TRIPLET_LETTERS = {"yes": "b", "no": "c", "dont_know": "k"}


def launch(playwright):
    """A headless Chromium (a fresh profile: Playwright's own temporary one)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)


def serious_violations(page):
    """axe-core's serious and critical findings on the page shown: a list of (rule, impact, help, targets).

    axe-core runs in the page (its script ships with ``axe-playwright-python``: nothing is fetched).
    """
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page).response["violations"]
    return [(v["id"], v["impact"], v["help"], [n["target"] for n in v["nodes"]][:5]) for v in found
            if v["impact"] in ("serious", "critical")]


def truth(labels, rows):
    """The right answer to a question on ``rows`` (2: pairwise, 3: triplet) under ``labels``."""
    if len(rows) == 2:
        return "must_link" if labels[rows[0]] == labels[rows[1]] else "cannot_link"
    a, b, c = (labels[r] for r in rows)
    return "yes" if a == b != c else "no" if a == c != b else "dont_know"


class AnnotatorPage:
    """One worker's tab on an annotator link: read the question shown, answer it by click or key.

    Parameters
    ----------
    page : playwright.sync_api.Page
    """

    def __init__(self, page):
        self.page = page
        self.console_errors = []
        page.on("console", lambda m: m.type == "error" and self.console_errors.append(m.text))
        page.on("pageerror", lambda e: self.console_errors.append(str(e)))

    def open(self, url, timeout=60):
        """Go to the link; returns the seconds until the first question is shown."""
        t0 = time.perf_counter()
        self.page.goto(url)
        self.wait_question(0, timeout)
        return time.perf_counter() - t0

    def ready(self):
        return int(self.page.evaluate("Number(document.getElementById('app').dataset.ready || 0)"))

    def wait_question(self, after, timeout=60):
        """Wait until a question newer than the ``after``-th is shown (or the done screen)."""
        self.page.wait_for_function(
            "after => Number(document.getElementById('app').dataset.ready || 0) > after || "
            "!document.getElementById('done').hidden || !document.getElementById('failed').hidden",
            arg=after, timeout=timeout * 1000)

    def done(self):
        return self.page.evaluate("!document.getElementById('done').hidden")

    def rows(self):
        """The dataset rows of the question shown, in the question's order (a, b[, c]): the page may
        show a triplet's b and c swapped (``data-slot`` says where each came from)."""
        cards = self.page.eval_on_selector_all(
            "#items .item", "els => els.map(e => [Number(e.dataset.slot), Number(e.dataset.row)])")
        return [row for _, row in sorted(cards)]

    def swapped(self):
        return self.page.evaluate("document.getElementById('app').dataset.swapped === '1'")

    def question_id(self):
        return self.page.evaluate("document.getElementById('app').dataset.questionId")

    def answer(self, value, how="click", timeout=60):
        """Answer the question shown by a click on its button or its key; wait for the next one.

        ``value`` is the answer to the question as asked (``yes``: a is closer to b), whichever side
        the page shows b on.

        Returns
        -------
        float
            Seconds from the answer to the next question shown (or the done screen).
        """
        before = self.ready()
        triplet = len(self.rows()) == 3
        if triplet and value in ("yes", "no") and self.swapped():  # the button of the candidate shown as B
            value = {"yes": "no", "no": "yes"}[value]
        t0 = time.perf_counter()
        if how == "click":
            self.page.click(f'button.answer[data-answer="{value}"]')
        else:
            keys = (TRIPLET_KEYS if triplet else PAIR_KEYS) if how == "key" else \
                (TRIPLET_LETTERS if triplet else PAIR_LETTERS)
            self.page.keyboard.press(keys[value])
        self.wait_question(before, timeout)
        return time.perf_counter() - t0

    def flushed(self, timeout=30):
        """Wait until the page holds no answer and its outbox is empty (everything reached Shoal)."""
        self.page.wait_for_function(
            "() => { for (let i = 0; i < localStorage.length; i++) { const v = JSON.parse(localStorage.getItem("
            "localStorage.key(i))); if (v.held || (v.outbox && v.outbox.length)) return false; } return true; }",
            timeout=timeout * 1000)
