"""The ipywidgets view (frontends without the extension; here forced with progress="widget") in JupyterLab in a
real browser: a reader following a trial's output stays at its newest lines while it prints, and a reader who
scrolled up stays where they were."""

from notebook_runs import cell_view, open_and_run_all, write_notebook
from playwright.sync_api import expect

PRINTING = """import time
import jupyter_dist
from jupyter_dist import report, space

def chatty(lines=600):
    for step in range(lines):
        print(f"line {step}", flush=True)
        report(step=step, v=float(step))
        time.sleep(0.05)

exp = jupyter_dist.hpo(chatty, {"lines": space.choice([600])}, trials=1, metric="v", progress="widget")
"""

# The Output tab's scroll pane (the printed text's nearest box of bounded height): its geometry, its last line.
SCROLLER = """() => {
  let node = [...document.querySelectorAll('.jp-OutputArea pre')].find(p => p.innerText.startsWith('line '));
  while (node && getComputedStyle(node).maxHeight === 'none') node = node.parentElement;
  return node;
}"""
PANE = f"""() => {{
  const pane = ({SCROLLER})();
  if (!pane) return null;
  const lines = pane.innerText.trim().split('\\n');
  return {{top: pane.scrollTop, gap: pane.scrollHeight - pane.scrollTop - pane.clientHeight,
          last: parseInt(lines[lines.length - 1].split(' ')[1] || '-1'),
          scrollable: pane.scrollHeight > pane.clientHeight + 50}};
}}"""


def _last_line(page) -> int:
    return page.evaluate(PANE)["last"]


def test_the_output_tab_follows_a_printing_trial_and_keeps_a_reader_who_scrolled(lab, page):
    write_notebook(lab.root / "widget.ipynb", PRINTING)
    open_and_run_all(lab, page, "widget.ipynb")
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
    cell.get_by_role("tab", name="Output").click(timeout=120_000)
    page.wait_for_function(f"() => {{ const p = ({PANE})(); return p && p.scrollable; }}", timeout=60_000)

    # Opened mid-run (the pane was drawn while its tab was hidden): it shows the newest lines by itself.
    seen = _last_line(page)
    page.wait_for_function(f"() => ({PANE})().last > {seen + 10}", timeout=30_000)
    pane = page.evaluate(PANE)
    assert pane["gap"] < 4, pane

    # Scrolled up: redraws leave the reader where they were.
    page.evaluate(f"() => {{ ({SCROLLER})().scrollTop = 40; }}")
    seen = _last_line(page)
    page.wait_for_function(f"() => ({PANE})().last > {seen + 20}", timeout=30_000)
    assert page.evaluate(PANE)["top"] == 40

    # Back at the bottom: it follows again.
    page.evaluate(f"() => {{ ({SCROLLER})().scrollTop = 1e9; }}")
    seen = _last_line(page)
    page.wait_for_function(f"() => ({PANE})().last > {seen + 10}", timeout=30_000)
    pane = page.evaluate(PANE)
    assert pane["gap"] < 4, pane
    expect(cell_view(page, 1)).to_have_count(0)  # the widget view, not the extension's
    assert not page.errors
