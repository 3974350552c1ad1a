"""An ablation study as the trial loop runs it (a trial source walking the plan) and as the user reads it
(an Experiment whose summary is a table of each component's impact, and whose plot is a bar chart of it)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Collection

from ..experiment import Experiment
from ..protocol import ErrorKind, Outcome, ReportRow, TrialState, derive_seed
from ..store import ExperimentRecord
from ..trials import TrialSpec
from ._plan import BASELINE, Plan

SUMMARY_COLUMNS = ["component", "kind", "mean", "std", "delta", "impact", "n"]
KIND_COLOURS = {"feature": "#1f77b4", "module": "#9467bd", "flag": "#ff7f0e", "group": "#7f7f7f"}


class AblationSource:
    """Hands out the plan's trials in order. Nothing is pruned: every variant must run to its end to compare."""

    prunes = False

    def __init__(self, plan: Plan, done: Collection[int] = frozenset(), seed: int | None = None) -> None:
        """``done``: trial ids a resumed study already finished. ``seed``: the study's (its repeat 0's)."""
        self.plan = plan
        self.seed = seed
        self._planned = [t for t in plan.trials if t.trial_id not in done]
        self._given = 0
        self._variant = {t.trial_id: t.variant for t in plan.trials}
        self.halted = False

    def next_trial(self) -> TrialSpec | None:
        if not self.remaining():
            return None
        trial = self._planned[self._given]
        self._given += 1
        labels = {"ablated": trial.variant.name, "kind": trial.variant.kind, "repeat": trial.repeat}
        # Seeded by the repeat, not the trial id: every variant of a repeat draws what the baseline drew, so the
        # comparison stays paired (as the seed= each repeat passes to fn).
        seed = None if self.seed is None else derive_seed(self.seed, trial.repeat)
        return TrialSpec(trial.trial_id, dict(trial.params), labels, seed=seed)

    def remaining(self) -> int:
        return 0 if self.halted else len(self._planned) - self._given

    def report(self, trial_id: int, rows: list[ReportRow]) -> bool:
        return False

    def tell(self, outcome: Outcome) -> None:
        # A baseline that fails on the study itself (a module the model lacks, ablate() never called) would fail
        # the same way in every variant: start no more of them.
        if (
            outcome.state is TrialState.FAILED
            and self._variant[outcome.trial_id].kind == BASELINE
            and outcome.error_kind is ErrorKind.SETUP
        ):
            self.halted = True


class AblationExperiment(Experiment):
    """An Experiment whose trials are the plan's variants; ``summary()`` and ``plot()`` compare them."""

    def __init__(
        self, record: ExperimentRecord, stop: Callable[[], None] | None = None, *, plan: Plan
    ) -> None:
        super().__init__(record, stop)
        self.plan = plan

    def _trial_function(self, fn: Callable) -> Callable:
        """``fn`` as the study runs it: each variant's modules replaced by an identity (which trial is which
        variant read from the trials' labels: a stored study's plan keeps its variants, not its trials)."""
        from ._ablate import AblationTrial

        variants = {v.name: v for v in self.plan.variants}
        removed = {}
        for rec in self.trial_records():
            variant = variants.get(str(rec.labels.get("ablated")))
            if variant is not None and variant.modules:
                removed[rec.trial_id] = variant.modules
        modules = tuple(dict.fromkeys(m for v in self.plan.variants for m in v.modules))
        return AblationTrial(fn, self.plan.modules or modules, removed)

    def _values(self) -> dict[str, list[float]]:
        values: dict[str, list[float]] = {}
        for rec in self.trial_records():
            if rec.state is TrialState.COMPLETED and rec.value is not None:
                values.setdefault(rec.labels["ablated"], []).append(rec.value)
        return values

    def summary(self):
        """One row per variant: component, kind, mean, std (over repeats), delta (mean - baseline's mean),
        impact (how much worse the objective is without it: positive means the component helps), n (completed
        runs). The baseline comes first, then the components from the most to the least important."""
        import pandas as pd

        values = self._values()
        baseline = _mean(values.get(BASELINE, []))
        sign = -1 if self.mode == "max" else 1
        rows = []
        for variant in self.plan.variants:
            runs = values.get(variant.name, [])
            mean = _mean(runs)
            delta = mean - baseline
            rows.append(
                {
                    "component": variant.name,
                    "kind": variant.kind,
                    "mean": mean,
                    "std": statistics.stdev(runs) if len(runs) > 1 else math.nan,
                    "delta": delta,
                    "impact": sign * delta + 0.0,  # + 0.0: no "-0.0" for the baseline
                    "n": len(runs),
                }
            )
        frame = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
        is_baseline = frame["kind"] == BASELINE
        ranked = frame[~is_baseline].sort_values("impact", ascending=False, na_position="last", kind="stable")
        return pd.concat([frame[is_baseline], ranked], ignore_index=True)

    def plot(self):
        """A bar chart of each component's delta against the baseline (error bars: the std over repeats)."""
        import plotly.graph_objects as go

        table = self.summary()
        base = table.iloc[0]
        parts = table.iloc[1:][::-1]  # plotly draws horizontal bars bottom-up: the most important on top
        repeated = bool(parts["std"].notna().any())
        fig = go.Figure(
            go.Bar(
                x=parts["delta"],
                y=[f"{c} ({k})" for c, k in zip(parts["component"], parts["kind"], strict=True)],
                orientation="h",
                marker_color=[KIND_COLOURS.get(k, "#7f7f7f") for k in parts["kind"]],
                error_x={"type": "data", "array": parts["std"].fillna(0), "visible": repeated},
                hovertemplate="%{y}: Δ %{x:.4g}<extra></extra>",
            )
        )
        spread = f" ± {base['std']:.3g}" if not math.isnan(base["std"]) else ""
        fig.add_vline(x=0, line_color="#444", line_width=1)
        fig.update_layout(
            title=f"{self.name}: {self.metric} without each component, vs the baseline's "
            f"{base['mean']:.4g}{spread}",
            xaxis_title=f"Δ {self.metric} (left out − baseline; {self.mode} is better)",
            height=max(260, 60 + 36 * len(parts)),
            margin={"l": 10, "r": 10, "t": 50, "b": 40},
            template="plotly_white",
        )
        return fig

    def _final_outputs(self) -> list:
        return [self.summary(), self.plot()]

    def _highlight(self) -> str | None:
        runs = self._values().get(BASELINE)
        if not runs:
            return None
        spread = f" ± {statistics.stdev(runs):.3g}" if len(runs) > 1 else ""
        return f"baseline {self.metric}={_mean(runs):.4g}{spread} ({len(runs)} run{'s' * (len(runs) > 1)})"

    def _repr_html_(self) -> str:
        import html

        table = self.summary().to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="")
        return f"<div><b>{html.escape(self.status_line())}</b>{table}</div>"


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else math.nan
