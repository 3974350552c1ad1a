"""A failed trial's traceback in the user's terms, in a real kernel: the notebook's cell and line with its source
(``Cell In[2], line 5``, as IPython writes its own), not cloudpickle's ``<dynamic-code>``, and none of
jupyter_dist's frames unless asked for."""

from __future__ import annotations

import nbformat
from nbclient import NotebookClient

SETUP = "import jupyter_dist as jd\nfrom jupyter_dist import space"
TRAIN = """\
def scale(x):
    return x / 0.0


def train(x=0.5):
    jd.report(step=0, score=x)
    return scale(x) + 1
"""
RUN = """\
try:
    jd.hpo(train, {"x": space.uniform(0.1, 1)}, trials=1, metric="score", name="broken", progress="text",
           max_failures=1)
except jd.ExperimentFailed as failed:
    print("LIVE<<<" + failed.experiment.trials.error[0] + ">>>")
print("STORED<<<" + jd.load("broken").trials.error[0] + ">>>")
print("LOGS<<<" + jd.load("broken").logs(0) + ">>>")
"""


def run_notebook(tmp_path) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(SETUP),
        nbformat.v4.new_code_cell(TRAIN),
        nbformat.v4.new_code_cell(RUN),
    ]
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    return "".join(o.get("text", "") for o in nb.cells[2].outputs)


def between(text: str, start: str) -> str:
    return text.split(start + "<<<", 1)[1].split(">>>", 1)[0]


def test_a_failed_trial_shows_the_cell_line_and_source_without_the_package(tmp_path):
    printed = run_notebook(tmp_path)
    for error in (between(printed, "LIVE"), between(printed, "STORED")):
        assert "Cell In[2], line 7, in train\n    return scale(x) + 1\n" in error, error
        assert "Cell In[2], line 2, in scale\n    return x / 0.0\n" in error, error
        assert error.rstrip().endswith("ZeroDivisionError: float division by zero")
        assert "<dynamic-code" not in error and "jupyter_dist" not in error and "_runner.py" not in error
    # The first attempt's traceback (max_failures=1 ran it again), kept in the trial's output, reads the same.
    logs = between(printed, "LOGS")
    assert logs.count("Cell In[2], line 7, in train\n    return scale(x) + 1\n") == 2, logs
    assert "--- attempt 1 failed ---" in logs and "<dynamic-code" not in logs
    # The text view's line for the failure says where it failed.
    assert (
        "trial 0 failed: ZeroDivisionError: float division by zero at Cell In[2], line 2: return x / 0.0"
        in printed
    )


def test_the_package_frames_stay_when_asked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_DIST_FULL_TRACEBACKS", "1")  # the kernel and its cluster's workers inherit it
    error = between(run_notebook(tmp_path), "STORED")
    assert "trials/_runner.py" in error and "Cell In[2], line 7, in train" in error


MAGIC = """%%distribute hpo --trials 1 --metric score --name magic
from jupyter_dist import report, space
sp = {"x": space.uniform(0.1, 1)}

def train(x=0.5):
    report(step=0, score=x)
    return x / 0.0
"""


def test_a_function_defined_in_a_distribute_cell_is_shown_in_that_cell(tmp_path):
    nb = nbformat.v4.new_notebook()
    loaded = "%load_ext jupyter_dist\nimport jupyter_dist as jd\njd.hpo  # noqa"
    shown = 'print("STORED<<<" + jd.load("magic").trials.error[0] + ">>>")'
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (loaded, MAGIC, shown)]
    NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
        allow_errors=True,  # the cell's experiment fails: every trial does
    ).execute()
    error = between("".join(o.get("text", "") for o in nb.cells[2].outputs), "STORED")
    assert "Cell In[2], line 7, in train\n    return x / 0.0\n" in error, error
    assert "<dynamic-code" not in error and "jupyter_dist" not in error
