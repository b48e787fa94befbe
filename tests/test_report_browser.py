"""The rendered report in a real browser: a headless Chromium (tests/browser.py) opens it and
every image must load, the console must stay free of errors, and every in-page link
(``a[href^="#"]``, the table of contents among them) must lead to an element with that id.

The report checked is built by the renderer from the hand-made manifest of
tests/test_report_render.py (no pipeline run); with INDUCTIONLAB_REPORT_HTML naming a file,
that file (e.g. a real reports/report.html) is checked as well. A negative control, a page
with one fault of each kind, shows that the checks catch them.

Needs Debian's ``chromium`` (.ci/run installs it) and ``websocket-client`` (the ``test``
extra); without them the module is skipped, saying why, unless INDUCTIONLAB_REQUIRE_BROWSER
is set (as in CI), in which case a browser that cannot start is a failure.
"""
import base64
import os
from pathlib import Path

import pytest

from browser import BrowserUnavailable, Chromium
from services import started
from inductionlab.report.render import build_html
from test_report_render import _png, manifest  # noqa: F401  (manifest is a fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.browser]  # the end-to-end tests: python -m pytest -m 'not e2e' runs the rest


@pytest.fixture(scope="module")
def browser():
    with started(Chromium(), BrowserUnavailable, "INDUCTIONLAB_REQUIRE_BROWSER",
                 "headless Chromium") as chromium:
        yield chromium


def test_rendered_report_in_browser(manifest, browser, tmp_path):
    path = tmp_path / "report.html"
    html = build_html(manifest)
    path.write_text(html, encoding="utf-8")
    page = browser.check_page(path)
    assert not page.problems(), "\n".join(page.problems())
    # what was checked, so that the test cannot pass on an empty page
    assert page.title == "Hand-made report"
    assert len(page.images) == 3
    assert page.tables == html.count("<table") > 0
    contents = {link["href"] for link in page.links}
    assert {"#summary", "#chapter-training", "#chapter-heads", "#study-extra_study",
            "#methods", "#configuration"} <= contents


def test_real_report_in_browser(request):
    name = os.environ.get("INDUCTIONLAB_REPORT_HTML")
    if not name:
        pytest.skip("INDUCTIONLAB_REPORT_HTML is not set (set it to a report.html to check it)")
    path = Path(name)
    assert path.is_file(), f"INDUCTIONLAB_REPORT_HTML={name} is not a file"
    page = request.getfixturevalue("browser").check_page(path)
    assert not page.problems(), "\n".join(page.problems())
    assert page.images and page.links and page.tables


def test_checks_catch_each_fault(browser, tmp_path):
    """Negative control: one good and one bad of each kind; only the bad ones are reported."""
    good = base64.b64encode(_png(tmp_path / "good.png", "black").read_bytes()).decode()
    path = tmp_path / "faulty.html"
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>faulty</title></head><body>\n"
        "<nav><a href='#here'>here</a> <a href='#nowhere'>nowhere</a></nav>\n"
        "<h1 id='here'>Here</h1>\n"
        f"<img alt='good' src='data:image/png;base64,{good}'>\n"
        "<img alt='broken' src='data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAA'>\n"
        "<script>console.error('deliberate console error');</script>\n"
        "</body></html>\n", encoding="utf-8")
    page = browser.check_page(path)
    assert [img["alt"] for img in page.broken_images] == ["broken"]
    assert [img["alt"] for img in page.images] == ["good", "broken"]
    assert page.console_errors == ["deliberate console error"]
    assert [link["href"] for link in page.dangling_links] == ["#nowhere"]
    assert len(page.links) == 2
    assert len(page.problems()) == 3
