"""labextension/src/wire.ts is generated from the store's wire types (scripts/wire_types.py): it must be current."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "wire_types.py"


@pytest.fixture(scope="module")
def wire_types():
    spec = importlib.util.spec_from_file_location("wire_types", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_wire_ts_is_what_the_python_types_generate(wire_types):
    assert wire_types.TARGET.read_text() == wire_types.render(), (
        "labextension/src/wire.ts is out of date: run python scripts/wire_types.py"
    )


def test_the_check_says_so_when_wire_ts_is_out_of_date(wire_types, tmp_path, monkeypatch):
    stale = tmp_path / "wire.ts"
    stale.write_text(wire_types.render().replace("queued: boolean", "queued: string"))
    monkeypatch.setattr(wire_types, "TARGET", stale)
    assert wire_types.main(["--check"]) == 1
    assert wire_types.main([]) == 0 and wire_types.main(["--check"]) == 0
    assert "queued: boolean;" in stale.read_text()


def test_the_script_runs_by_hand():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_every_shape_the_views_name_is_generated(wire_types):
    text = wire_types.render()
    for name in (
        "Mode",
        "IExperimentSummary",
        "IExperimentList",
        "ITrialSummary",
        "IExperimentDetail",
        "IMetricsPage",
        "ITrialLogs",
        "ILogs",
        "ICurvesSnapshot",
        "IExperimentBundle",
    ):
        assert f"export interface {name} {{" in text or f"export type {name} = " in text, name
    assert "rows: [number, number, number, number, Record<string, number | null>][];" in text
    assert "trials: [number, number, number[], (number | null)[]][];" in text
    assert "params: Record<string, unknown>;" in text and "about?: Record<string, any>;" in text


def test_a_type_json_cannot_carry_is_refused_with_what_to_use(wire_types):
    with pytest.raises(TypeError, match="no TypeScript for .*set.*use JSON's types"):
        wire_types.ts_type(set[int])
