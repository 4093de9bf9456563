"""The report in a real browser: the system's Chromium, driven by Playwright, with every
request that would leave the file refused. Charts render, nothing logs an error, the
filter, the folded code and the charts' legends respond, and from 1400 px the page and its
summary and ablation tables fit the window."""

from __future__ import annotations

import shutil
import tempfile

import pytest
from click.testing import CliRunner
from geak_core.cli import main

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (install.sh --with-browser installs Debian's package when run as root)")

# Chromium's own connections (updates, sync, field trials) would be refused by a closed
# network and logged; these switches keep it to the page.
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=ARGS,
            viewport={"width": 1300, "height": 900})
        yield context
        context.close()


class Page:
    """One report opened in the browser, with what it logged and tried to fetch."""

    def __init__(self, context, path):
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.page = context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def refuse(route):
            self.outside.append(route.request.url)
            route.abort()

        self.page.route(lambda url: not url.startswith(("file:", "data:", "blob:")), refuse)
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")

    def rendered_traces(self) -> dict[str, int]:
        """Per chart: how many of its series the browser drew with a size (0 where none)."""
        return self.page.evaluate("""() => Object.fromEntries(
            Array.from(document.querySelectorAll('.chart')).map(c => {
              const drawn = Array.from(c.querySelectorAll('svg .series')).filter(g => {
                const box = g.getBBox();
                return box.width > 0 || box.height > 0;
              });
              return [c.dataset.chart, drawn.length];
            }))""")


def _report(tmp_path, *runs) -> object:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", *map(str, runs), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_the_quickstart_report_renders_its_charts_without_errors(browser, quickstart_run, tmp_path):
    view = Page(browser, _report(tmp_path, quickstart_run))
    traces = view.rendered_traces()
    assert set(traces) == {"sequential", "parallel", "category", "difficulty"}
    assert all(n > 0 for n in traces.values()), traces
    assert view.errors == [] and view.outside == []
    page = view.page
    # the folded kernel opens to highlighted code
    code = page.locator('.kernel[data-task="softmax"] details.best-code')
    assert not code.locator(".hl").is_visible()
    code.locator("summary").click()
    assert code.locator(".hl").is_visible() and "softmax_kernel" in code.locator(".hl").inner_text()
    # the filter keeps only the matching task's rows
    page.fill("#task-filter", "softmax")
    assert page.locator('.task-table tr[data-task="softmax"]').is_visible()
    assert not page.locator('.task-table tr[data-task="test_add_kernel"]').is_visible()
    page.fill("#task-filter", "")
    assert page.locator('.task-table tr[data-task="test_add_kernel"]').is_visible()
    page.close()


def test_a_timed_ablation_report_renders_speedups_rooflines_and_responds(browser, timed_runs, tmp_path):
    view = Page(browser, _report(tmp_path, *timed_runs))
    traces = view.rendered_traces()
    assert {"sequential", "sequential-speedup", "parallel", "speedup", "roofline-0", "category",
            "difficulty"} <= set(traces)
    assert all(n > 0 for n in traces.values()), traces
    assert view.errors == [] and view.outside == []
    page = view.page
    assert page.locator("#ablation-table tr").count() == 3  # header and one row per run
    # clicking a legend entry hides its series; a second click shows it again
    chart = page.locator('[data-chart="roofline-0"]')
    last = chart.locator(".legend li").last
    series = chart.locator(f'svg .series[data-series="{last.get_attribute("data-series")}"]')
    assert series.is_visible()
    last.click()
    assert not series.is_visible()
    last.click()
    assert series.is_visible()
    # a task's point is where the mouse finds it, and its tooltip gives its shape and throughput
    point = series.locator(".point").first
    box = point.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    hit = page.evaluate("([x, y]) => document.elementFromPoint(x, y).closest('.point') !== null",
                        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
    assert hit and "TFLOP/s" in point.locator("title").text_content()
    diff = page.locator('.kernel[data-task="vector_add"] details.diff').first
    diff.locator("summary").click()
    assert "evict_first" in diff.inner_text()
    assert view.errors == []
    page.close()


OVERFLOW = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const found = [];
  const page = document.documentElement.scrollWidth - window.innerWidth;
  if (page > 1) found.push('the page scrolls sideways by ' + page + ' px');
  for (const section of document.querySelectorAll('main > section')) {
    const right = section.getBoundingClientRect().right;
    for (const el of section.querySelectorAll('*')) {
      if (el.closest('svg') || el.offsetParent === null) continue;  // chart internals, hidden
      let scrolls = false;  // inside something of the card that scrolls or clips it
      for (let a = el.parentElement; a && a !== section; a = a.parentElement) {
        if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(a).overflowX)) { scrolls = true; break; }
      }
      const over = el.getBoundingClientRect().right - right;
      if (!scrolls && over > 1) {
        found.push(section.id + ': ' + el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' by ' + Math.round(over) + ' px');
        break;
      }
    }
  }
  return found;
}"""


WIDTHS = """() => ({
  page: document.documentElement.scrollWidth,
  tables: Array.from(document.querySelectorAll('#summary-table, #ablation-table'))
    .map(t => [t.id, t.scrollWidth, t.clientWidth]),
})"""


@pytest.mark.parametrize("width", [1400, 1920])
def test_from_1400_px_the_summary_and_ablation_tables_of_three_runs_fit_and_the_file_is_small(
        browser, quickstart_run, timed_runs, tmp_path, width):
    """Three runs (a CPU quickstart and two timed ones): the page does not scroll sideways,
    the summary and ablation tables need no scrolling of their own, and the file, charts
    and all, stays under 1.5 MB."""
    path = _report(tmp_path, quickstart_run, *timed_runs)
    assert path.stat().st_size < 1.5e6, path.stat().st_size
    view = Page(browser, path)
    view.page.set_viewport_size({"width": width, "height": 900})
    found = view.page.evaluate(WIDTHS)
    assert found["page"] <= width, found
    assert [t[0] for t in found["tables"]] == ["summary-table", "ablation-table"]
    assert all(scroll <= client for _, scroll, client in found["tables"]), found
    assert view.errors == [] and view.outside == []
    view.page.close()


@pytest.mark.parametrize("width", [800, 1400, 1920])
def test_no_table_or_chart_is_wider_than_its_card(browser, quickstart_run, timed_runs, tmp_path, width):
    """At 800, 1400 and 1920 px, with every fold open, nothing sticks out of its section and
    the page does not scroll sideways: wide tables scroll within their card."""
    for runs in ([quickstart_run], timed_runs):
        view = Page(browser, _report(tmp_path, *runs))
        view.page.set_viewport_size({"width": width, "height": 900})
        view.page.wait_for_timeout(300)  # charts resize on the window's resize event
        assert view.page.evaluate(OVERFLOW) == [], (width, runs)
        view.page.close()
