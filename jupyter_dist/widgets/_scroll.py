"""A scrolling HTML pane whose content is replaced without losing the reader's place.

An ``ipywidgets.HTML`` whose value changes is re-rendered whole, so a scrolled ``<pre>`` inside it jumps back to the
top on every redraw: the newest lines of a running trial cannot be followed, and a scrolled trials table snaps
back. This pane keeps the scroll container itself and swaps only what is inside it: a reader at the bottom of a
``follow`` pane stays at the bottom as lines arrive (as a terminal does), anyone else stays where they were.
"""

from __future__ import annotations

import anywidget
import traitlets

_ESM = """
function render({ model, el }) {
  const pane = document.createElement("div");
  pane.className = "jupyter-dist-scroll";
  pane.style.overflow = "auto";
  el.appendChild(pane);
  // Whether the reader is at the bottom, as of their last scroll: a pane drawn while its tab is hidden has no
  // geometry to ask, and must still follow once the tab is opened.
  let atBottom = true;
  pane.addEventListener("scroll", () => {
    atBottom = pane.scrollHeight - pane.scrollTop - pane.clientHeight < 4;
  });
  const draw = () => {
    pane.style.maxHeight = model.get("max_height");
    const top = pane.scrollTop;
    pane.innerHTML = model.get("html");
    pane.scrollTop = model.get("follow") && atBottom ? pane.scrollHeight : top;
  };
  draw();
  model.on("change:html", draw);
  return () => model.off("change:html", draw);
}
export default { render };
"""


class ScrollPane(anywidget.AnyWidget):
    _esm = _ESM
    html = traitlets.Unicode("").tag(sync=True)
    follow = traitlets.Bool(False).tag(sync=True)  # keep a reader who is at the bottom at the bottom
    max_height = traitlets.Unicode("300px").tag(sync=True)
