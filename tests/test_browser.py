"""The site as a reader sees it: headless Chromium, driven by Playwright, opens every page of
the built site from a local HTTP server with every request to another host blocked (a meeting
room without network), and checks what the page shows. Screenshots of each page are kept in
_build/screenshots/ (look at them after a change to the site)."""

import functools
import http.server
import re
import threading

import pytest
import yaml

from conftest import ROOT, SESSIONS
from deck import measure, over_limits

pytestmark = pytest.mark.site
SHOTS = ROOT / "_build" / "screenshots"
REPO = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
# Text that MathJax leaves when it did not typeset an equation (code blocks excluded).
RAW_MATH = r"\\\(|\\\[|\$\$"
PROSE_TEXT = """() => {
  const copy = document.querySelector("main, body").cloneNode(true);
  copy.querySelectorAll("pre, code, script, style, mjx-container, .MathJax").forEach(e => e.remove());
  return copy.innerText;
}"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # a free port
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()


class Visit:
    """One page in a fresh browser context whose requests to other hosts fail."""

    def __init__(self, browser, base, path):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.blocked, self.failed, self.errors = [], [], []

        def route(route):
            if route.request.url.startswith(base):
                route.continue_()
            else:
                self.blocked.append(route.request.url)
                route.abort()

        self.context.route("**/*", route)
        self.page = self.context.new_page()
        self.page.on(
            "console", lambda m: m.type == "error" and self.errors.append(m.text)
        )
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.failed.append(r.url))
        self.page.goto(f"{base}/{path}")
        self.page.wait_for_load_state("networkidle")
        self.page.wait_for_function(
            "!window.MathJax || !!(MathJax.startup && MathJax.startup.promise)"
        )
        self.page.evaluate(
            "window.MathJax && MathJax.startup.promise"
        )  # typesetting finished
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(
            path=str(SHOTS / f"{path.replace('/', '__')}.png"), full_page=False
        )

    def assert_clean(self, math=True):
        assert not self.blocked, f"requests to other hosts: {self.blocked}"
        assert not self.failed, f"failed requests: {self.failed}"
        assert not self.errors, f"console errors: {self.errors}"
        raw = re.findall(
            rf".{{0,40}}(?:{RAW_MATH}).{{0,40}}", self.page.evaluate(PROSE_TEXT)
        )
        assert not (math and raw), f"equations left untypeset: {raw[:3]}"
        broken = self.page.evaluate(
            "[...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
        )
        assert not broken, f"images that did not load: {broken}"

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser, server):
    opened = []

    def open_page(path):
        opened.append(Visit(browser, server, path))
        return opened[-1]

    yield open_page
    for page in opened:
        page.close()


@pytest.mark.parametrize("path", ["intro.html", "papers/index.html", "status.html"])
def test_book_page(visit, path):
    visit(path).assert_clean()


def test_session_page_and_its_deck(visit, notebook):
    page = visit(f"sessions/{notebook.stem}.html")
    page.assert_clean()
    assert page.page.evaluate("document.querySelectorAll('mjx-container').length") > 0
    colab = page.page.get_attribute("a:has-text('open in Colab')", "href")
    assert colab.endswith(
        f"/{REPO.removeprefix('https://github.com/')}/blob/colab/sessions/{notebook.name}"
    ), colab
    page.page.set_viewport_size({"width": 1440, "height": 900})  # a laptop's window
    wide = page.page.evaluate(
        "[...document.querySelectorAll('div.cell_input pre')]"
        ".filter(p => p.scrollWidth > p.clientWidth).map(p => p.textContent.slice(0, 60))"
    )
    assert not wide, f"code that scrolls sideways at 1440 px: {wide}"
    deck_href = page.page.get_attribute("a:has-text('slides (reveal.js)')", "href")
    deck = visit(f"sessions/{deck_href}".replace("sessions/../", ""))
    deck.assert_clean()
    first = deck.page.locator(".reveal .slides > section.present")
    assert first.count() == 1 and first.is_visible(), "the deck shows no first slide"
    title = first.locator("h1").first.text_content()  # the theme shows it in capitals
    assert title.startswith(f"Session {int(notebook.stem[:2])}:"), title
    slides = measure(deck.page)  # every slide of the deck: words, notes, height
    second = slides[1]["heading"] if len(slides) > 1 else ""
    assert second.startswith("The question"), f"the second slide is {second!r}"
    bad = over_limits(slides)
    assert not bad, f"{len(bad)} slides over the limits:\n" + "\n".join(bad)


def test_session_page_has_worked_answers_folded(visit, notebook):
    page = visit(f"sessions/{notebook.stem}.html").page
    answers = page.locator("details", has=page.locator("summary", has_text="Answer"))
    assert answers.count() >= 3, f"{answers.count()} worked answers on the page"
    opened = answers.evaluate_all("ds => ds.filter(d => d.open).length")
    assert opened == 0, f"{opened} answers are open before the reader opens them"
    trail = page.locator(".book-session-trail").first.text_content()
    assert "Builds on" in trail or "Leads to" in trail, trail


def test_search_finds_flash_attention_for_online_softmax(visit):
    page = visit("search.html?q=online+softmax")
    page.page.wait_for_selector("#search-results li", timeout=20_000)
    results = page.page.locator("#search-results li a").evaluate_all(
        "a => a.map(x => x.href)"
    )
    assert any("02_flash_attention" in href for href in results), results
    page.assert_clean(
        math=False
    )  # result snippets are excerpts of the pages' source text


def test_sessions_table_links_resolve_within_the_site(visit, server):
    page = visit("intro.html")
    hrefs = page.page.locator("table a").evaluate_all("a => a.map(x => x.href)")
    local = [h for h in hrefs if h.startswith(server)]
    wanted = sum(2 for s in SESSIONS["sessions"] if "notebook" in s)  # notebook and deck
    assert len(local) >= wanted, f"{len(local)} links within the site, expected {wanted}"
    for href in local:
        response = page.page.request.get(href)
        assert response.ok, f"{href}: HTTP {response.status}"
