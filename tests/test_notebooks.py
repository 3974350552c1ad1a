"""The live view seen from the kernel's messages, in a real Jupyter kernel (the example notebooks are executed by the
docs build: tests/docs/test_tutorials.py)."""

from __future__ import annotations

import json
import queue
import time

import pytest
from jupyter_client.manager import start_new_kernel


@pytest.fixture(scope="module")
def kernel():
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        reply = kc.execute_interactive("%load_ext jupyter_dist", timeout=60)
        assert reply["content"]["status"] == "ok"
        yield km, kc
    finally:
        kc.execute_interactive("import jupyter_dist; jupyter_dist.close_local_cluster()", timeout=60)
        kc.stop_channels()
        km.shutdown_kernel(now=False)


CELL = """%%distribute hpo --trials {trials} --metric v --sampler random --seed 0 --pruner none
import time
from jupyter_dist import report, space
sp = {{"x": space.uniform(0, 1)}}
def slow(x=0.0):
    for step in range({steps}):
        time.sleep(0.05)
        report(step=step, v=x * step)
"""


class IopubLog:
    """Reads the kernel's iopub messages of one execution, with the time each arrived."""

    def __init__(self, kc, msg_id: str) -> None:
        self.kc, self.msg_id = kc, msg_id
        self.messages: list[tuple[float, dict]] = []
        self.comms: dict[str, dict] = {}  # comm id -> widget state at open

    def read(self, until, timeout: float = 180):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = self.kc.get_iopub_msg(timeout=1)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != self.msg_id:
                continue
            self.messages.append((time.monotonic(), msg))
            if msg["msg_type"] == "comm_open":
                self.comms[msg["content"]["comm_id"]] = msg["content"]["data"].get("state", {})
            if until(msg):
                return msg
        raise AssertionError(f"timed out; last messages: {[m['msg_type'] for _, m in self.messages[-5:]]}")

    def comm_of(self, model: str, *having: str, **state) -> str:
        """The first widget of ``model`` whose state has the keys ``having`` and the values ``state``."""
        return next(
            cid
            for cid, s in self.comms.items()
            if s.get("_model_name") == model
            and all(k in s for k in having)
            and all(s.get(k) == v for k, v in state.items())
        )

    def updates(self, comm_id: str, key: str) -> list[tuple[float, object]]:
        return [
            (t, m["content"]["data"]["state"][key])
            for t, m in self.messages
            if m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == comm_id
            and key in m["content"]["data"].get("state", {})
        ]


def _idle(msg) -> bool:
    return msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle"


def _result_of(kc, code: str) -> str:
    out = []
    kc.execute_interactive(code, timeout=60, output_hook=lambda m: out.append(m["content"].get("text", "")))
    return "".join(out).strip()


def test_widget_updates_arrive_while_the_cell_is_running(kernel):
    _, kc = kernel
    log = IopubLog(kc, kc.execute(CELL.format(trials=6, steps=10)))
    log.read(_idle)
    progress = log.comm_of("IntProgressModel")
    values = log.updates(progress, "value")
    seen = [v for _, v in values]
    assert seen == sorted(seen) and seen[-1] == 6
    assert len(set(seen)) >= 3  # several intermediate values, not one jump at the end
    finished_at = log.messages[-1][0]  # the kernel going idle: the cell's end
    # The view is the experiment's display: no second table below it (the cell has no result to show).
    assert not [m for _, m in log.messages if m["msg_type"] == "execute_result"]
    first_partial = next(t for t, v in values if 0 < v < 6)
    assert finished_at - first_partial > 0.3  # that update was on screen well before the cell finished
    # plotly 7's FigureWidget is an anywidget, as the view's scrolling panes are: told apart by its figure data.
    figure = log.comm_of("AnyModel", "_widget_data")
    figure_updates = [
        m for _, m in log.messages if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == figure
    ]
    assert len(figure_updates) >= 2  # live learning curves
    assert _result_of(kc, "print(exp.state)") == "completed"
    # where no widget frontend renders the view, its text is the final summary, not a placeholder
    final = [m for _, m in log.messages if m["msg_type"] == "update_display_data"][-1]
    assert final["content"]["data"]["text/plain"].startswith("hpo 'slow' completed: 6/6 trials done")
    # Before the cluster and the function check, the cell already said what it was doing (the view then
    # took over that same output).
    first = next(m for _, m in log.messages if m["msg_type"] == "display_data")
    assert first["content"]["data"]["text/plain"].startswith("jupyter_dist: ")
    assert first["content"]["transient"]["display_id"] == final["content"]["transient"]["display_id"]


def _the_view(m) -> bool:
    return m["msg_type"] in ("display_data", "update_display_data") and (
        "application/vnd.jupyter.widget-view+json" in m["content"]["data"]
    )


def test_the_stop_button_stops_a_running_experiment(kernel):
    _, kc = kernel
    started = time.monotonic()
    log = IopubLog(kc, kc.execute(CELL.format(trials=20, steps=200)))
    log.read(_the_view)  # the live view is on screen
    stop = log.comm_of("ButtonModel", description="Stop")
    time.sleep(1.0)  # trials are running
    click = kc.session.msg(
        "comm_msg", {"comm_id": stop, "data": {"method": "custom", "content": {"event": "click"}}}
    )
    kc.shell_channel.send(click)
    log.read(_idle)
    assert time.monotonic() - started < 60  # 20 trials x 10 s, 2 at a time, would take 100 s
    assert _result_of(kc, "print(exp.state, exp.counts()['stopped'] > 0)") == "stopped True"


def test_interrupting_the_kernel_stops_gracefully(kernel):
    km, kc = kernel
    msg_id = kc.execute(CELL.format(trials=20, steps=200))
    log = IopubLog(kc, msg_id)
    log.read(_the_view)  # the live view is on screen
    time.sleep(1.0)
    km.interrupt_kernel()
    log.read(_idle)
    errors = [m for _, m in log.messages if m["msg_type"] == "error"]
    assert not errors, [e["content"] for e in errors]  # a graceful stop, not a KeyboardInterrupt traceback
    assert _result_of(kc, "print(exp.state)") == "stopped"


LAB_MIME = "application/vnd.jupyter-dist.experiment+json"
# What a Jupyter server serving JupyterLab with jupyter_dist's server extension sets in the environment of the
# kernels it starts (jupyter_dist/_frontend.py); set here in a running kernel, as if it had started it.
LAB_FRONTEND = 'import os as _jd_os; _jd_os.environ["JUPYTER_DIST_FRONTEND"] = "jupyterlab"; del _jd_os'


@pytest.fixture
def lab_flagged(kernel):
    _, kc = kernel
    kc.execute_interactive(LAB_FRONTEND, timeout=60)
    yield kernel
    kc.execute_interactive('import os; os.environ.pop("JUPYTER_DIST_FRONTEND")', timeout=60)


def test_under_jupyterlab_the_cell_sends_a_few_small_messages_and_saves_the_final_view(lab_flagged):
    _, kc = lab_flagged
    log = IopubLog(kc, kc.execute(CELL.format(trials=6, steps=10)))
    log.read(_idle)
    kinds = [m["msg_type"] for _, m in log.messages]
    assert "comm_open" not in kinds and "comm_msg" not in kinds  # no widget: the extension draws it
    bundles = [m["content"]["data"] for _, m in log.messages if LAB_MIME in m["content"].get("data", {})]
    assert bundles[0][LAB_MIME]["phase"] and bundles[0]["text/plain"].startswith("jupyter_dist: ")
    experiment_id = next(b[LAB_MIME]["id"] for b in bundles if "id" in b[LAB_MIME])
    final = bundles[-1][LAB_MIME]
    snapshot = final["snapshot"]
    assert snapshot["id"] == experiment_id and snapshot["state"] == "completed"
    assert [t["state"] for t in snapshot["trials"]] == ["completed"] * 6
    assert snapshot["best"]["trial_id"] == max(snapshot["trials"], key=lambda t: t["value"])["trial_id"]
    assert len(final["curves"]["trials"]) == 6 and all(len(c[2]) == 10 for c in final["curves"]["trials"])
    assert final["param_order"] == ["x"]  # a saved notebook sorts its JSON's keys: the space's order, kept
    assert "<table" in bundles[-1]["text/html"]  # GitHub, nbviewer and nbconvert show the final table
    sent = sum(len(json.dumps(m["content"])) for _, m in log.messages)
    assert sent < 30_000, sent  # the widget view sends ~5 MB of plotly.js on a first run


def test_under_jupyterlab_a_stop_asked_through_the_store_stops_the_cell(lab_flagged):
    from jupyter_dist.store import StoreReader

    _, kc = lab_flagged
    store = _result_of(kc, "from jupyter_dist.store import store_path; print(store_path())")
    started = time.monotonic()
    log = IopubLog(kc, kc.execute(CELL.format(trials=20, steps=200)))
    shown = log.read(
        lambda m: LAB_MIME in m["content"].get("data", {}) and "id" in m["content"]["data"][LAB_MIME]
    )
    time.sleep(1.0)  # trials are running
    # What the server extension does when the Stop button is clicked.
    StoreReader(store).request_stop(shown["content"]["data"][LAB_MIME]["id"])
    log.read(_idle)
    assert time.monotonic() - started < 60  # 20 trials x 10 s, 2 at a time, would take 100 s
    final = [m for _, m in log.messages if m["msg_type"] == "update_display_data"][-1]
    assert final["content"]["data"][LAB_MIME]["snapshot"]["state"] == "stopped"


def _busy_times(log: IopubLog) -> list[float]:
    return [
        t for t, m in log.messages if m["msg_type"] == "status" and m["content"]["execution_state"] == "busy"
    ]


def test_while_an_experiment_runs_the_kernel_keeps_saying_busy_and_never_after_its_cell(lab_flagged):
    """JupyterLab's status bar shows the last status it saw, and other requests (the debugger's probe of a
    notebook that connects) end in an idle of their own while the cell runs: the cell says busy again twice a
    second, for its own request, and stops when the cell ends, whichever way it ends."""
    _, kc = lab_flagged
    # The cell's body takes 3 s (as importing torch does) before the experiment shows anything: busy already.
    cell = CELL.format(trials=8, steps=60).replace("import time\n", "import time\ntime.sleep(3)\n", 1)
    log = IopubLog(kc, kc.execute(cell))  # ~9 s
    final = log.read(_idle)
    ended = next(t for t, m in log.messages if m is final)
    said = _busy_times(log)
    assert len(said) >= 6, said  # the kernel's own busy at the cell's start, then two a second
    assert max(b - a for a, b in zip(said, said[1:], strict=False)) < 2.5
    first_output = next(t for t, m in log.messages if m["msg_type"] == "display_data")
    assert said[1] < first_output  # said during the body, before the experiment's first output
    time.sleep(2.5)  # nothing more once the cell has ended
    late = IopubLog(kc, log.msg_id)
    with pytest.raises(AssertionError):
        late.read(lambda m: True, timeout=2)
    assert ended > said[-1]

    # A cell that fails after its view appeared (a name already taken) stops saying busy too.
    _result_of(kc, "import jupyter_dist; jupyter_dist.hpo(slow, sp, trials=1, metric='v', name='taken')")
    failing = IopubLog(kc, kc.execute("jupyter_dist.hpo(slow, sp, trials=1, metric='v', name='taken')"))
    failing.read(_idle)
    assert any(m["msg_type"] == "error" for _, m in failing.messages)
    late = IopubLog(kc, failing.msg_id)
    with pytest.raises(AssertionError):
        late.read(lambda m: True, timeout=2.5)
