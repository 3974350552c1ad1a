"""A stored HPO experiment of the size issue 26 asks the views to open (10,000 trials x 100 reports), written in
seconds without Dask: through the run's own record and store writer (``InMemoryRecord`` + ``Journal``), the
calls the trial loop makes, so the store holds what a real run would have written.

Used by the browser tests (tests/lab/test_scale.py) and bench/bench_lab.py.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import nbformat

from jupyter_dist.protocol import Direction, ExperimentState, Objective, Outcome, ReportBatch, TrialState
from jupyter_dist.space import uniform
from jupyter_dist.store import ExperimentDefinition, InMemoryRecord, Journal

MIME_TYPE = "application/vnd.jupyter-dist.experiment+json"


def curve(x: float, y: float, step: int) -> float:
    """A learning curve that rises to a value depending on both parameters."""
    return (1 - math.exp(-(step + 1) / 20)) * (1 - (x - 0.3) ** 2 - 0.5 * (y - 0.6) ** 2)


def write_experiment(
    store: str, trials: int, steps: int, name: str = "big", running: int = 0, failed: int = 0
) -> InMemoryRecord:
    """Record an ended HPO run of ``trials`` trials of ``steps`` reports each into ``store``; the run's record
    (its id: ``record.definition.id``). With ``running`` or ``failed``, that many trials more, the last ones,
    are left running or failed, and a run left with running trials is left running (its writer open: finish the
    record to end it)."""
    space = {"x": uniform(0, 1), "y": uniform(0, 1)}
    definition = ExperimentDefinition(
        "hpo",
        name,
        Objective("acc", Direction.MAX),
        space,
        total=trials,
        details={"sampler": "random", "pruner": None},
    )
    journal = Journal(
        store, definition, {"function": "train", "source": "def train(x, y): ..."}, name_given=True
    )
    record = InMemoryRecord(journal.definition, journal)
    now = time.time()
    for trial_id in range(trials):
        # Spread evenly but not in order, so "best first" and trial ids differ.
        x, y = (trial_id * 0.618034) % 1, (trial_id * 0.754878) % 1
        record.trial_started(trial_id, {"x": x, "y": y}, {})
        rows = [[step, {"acc": curve(x, y, step)}, now] for step in range(steps)]
        record.reports_arrived(ReportBatch(trial_id, "a", rows))
        outcome = Outcome(
            trial_id, "a", TrialState.COMPLETED, returned={"acc": rows[-1][1]["acc"]}, steps=steps
        )
        outcome.value = rows[-1][1]["acc"]
        outcome.last = dict(rows[-1][1])
        outcome.duration = 1.0
        record.trial_finished(outcome)
    for trial_id in range(trials, trials + failed + running):
        record.trial_started(trial_id, {"x": 0.5, "y": 0.5}, {})
        record.reports_arrived(ReportBatch(trial_id, "a", [[0, {"acc": 0.0}, now]]))
        if trial_id < trials + failed:
            lost = Outcome(trial_id, "a", TrialState.FAILED, error="ValueError: no", steps=1)
            record.trial_finished(lost)
    if not running:  # else its writer commits within FLUSH_INTERVAL_S
        record.finish(ExperimentState.COMPLETED)
    return record


def write_notebook(record: InMemoryRecord, path: Path) -> None:
    """A notebook whose one code cell ran the experiment of ``record``: its saved output is the bundle the kernel
    writes from its record at a run's end (widgets/_lab.py), so reopening it shows the cell view as a user's
    saved notebook does."""
    from jupyter_dist.kinds import experiment_of
    from jupyter_dist.widgets._lab import LabView

    exp = experiment_of(record)
    bundle = LabView(exp)._bundle(ended=True)
    bundle["text/html"] = exp._repr_html_()
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    cell = nbformat.v4.new_code_cell("%%distribute hpo --trials ...", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    notebook.cells = [cell]
    nbformat.write(notebook, path)
