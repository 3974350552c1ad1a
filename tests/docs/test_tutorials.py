"""The example notebooks, as the docs build executed them in a real Jupyter kernel on the embedded cluster (the
tutorials pages): what each one shows a reader."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.timeout(900)  # the first test waits for the session's docs build

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_example_notebook_runs_without_error(path, docs_build):
    executed = docs_build.executed / "tutorials" / path.name
    assert executed.exists(), docs_build.log[-4000:]
    nb = nbformat.read(executed, as_version=4)
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    printed = "".join(o.get("text", "") for o in outputs)
    views = [o for o in outputs if "application/vnd.jupyter-dist.experiment+json" in o.get("data", {})]
    # Each experiment's cell view, with the HTML the page shows of it.
    assert views and all("<table" in o["data"]["text/html"] for o in views)
    if path.name.startswith("01_"):
        assert "best trial" in printed and "val_acc=" in printed
        assert "report written to quickstart_report.html" in printed
    if path.name.startswith("02_"):  # ASHA on a real torch MLP: some trials pruned, compute saved
        assert "pruned" in printed and "% saved by pruning" in printed
    if path.name.startswith("03_"):  # the passengers' known answer, and the table + chart at the end
        assert "features by importance: sex > fare > age" in printed
        study = nb.cells[2].outputs
        assert "Plotly.newPlot" in study[-1]["data"]["text/html"]
    if path.name.startswith("04_"):  # two ranks, each half the data, output of both; HPO of 2-rank jobs
        assert "22.0 batches per rank and epoch" in printed and "[rank 0] rank 0 of 2: val_acc=" in printed
        assert "best val_acc=" in printed
    if path.name.startswith("05_"):  # FSDP + bf16 + accumulation, exact gathered accuracy, a resumed trial
        assert "over val_seen=397 images" in printed
        assert "trial 0: completed, 2 attempt(s), resumed from step 3" in printed
        assert "epochs run per trial, both attempts: {0: 6, 1: 6}" in printed  # 4 + 2, not 4 + 6
        trained = re.search(r"val_acc=(\d\.\d+) over", printed).group(1)
        assert f"loaded in the notebook: val_acc={trained}" in printed  # the sharded checkpoint, loaded whole
    if path.name.startswith(
        "06_"
    ):  # seeded trials, one run again, a warm start, a comparison, one trained on, more trials
        assert "experiment seed: 7" in printed and "reproduced: same val_acc" in printed
        told = re.search(r"warm start: (\d+) trials? from 'wide'", printed)
        assert told and f"its study: {told.group(1)} trials told from wide, 6 run" in printed
        assert re.search(r"trial \d+: val_acc=[\d.]+ after 4 epochs, [\d.]+ after 8", printed)
        assert "attempts: 2, epochs reported: 8" in printed  # 4 + 4: none run again
        assert "14 trials, seed 7" in printed
