"""The user's surface, as a new user meets it: ``dir(jupyter_dist)``, an Experiment's public names, and one family of
exceptions."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import jupyter_dist as jd
from jupyter_dist.errors import JupyterDistError, TrialPruned

# Modules that import a training framework when imported (seconds each): they define no exception.
FRAMEWORK_MODULES = {
    "jupyter_dist.integrations.lightning",
    "jupyter_dist.integrations.pytorch_lightning",
    "jupyter_dist.integrations.transformers",
    "jupyter_dist.integrations._lightning_hooks",
    "jupyter_dist.integrations._lightning_ranks",
}


def _modules():
    for info in pkgutil.walk_packages(jd.__path__, "jupyter_dist."):
        if info.name not in FRAMEWORK_MODULES and ".labextension" not in info.name:
            yield importlib.import_module(info.name)


def test_dir_shows_the_api_and_the_public_subpackages_and_nothing_by_accident():
    shown = set(dir(jd))
    assert shown == {*jd.__all__, *jd.PUBLIC_SUBPACKAGES, "__version__"}
    assert "annotations" not in shown and not any(
        name.startswith("_") and name != "__version__" for name in shown
    )
    for name in shown:
        assert getattr(jd, name) is not None, name  # everything shown is there
    for name in jd.PUBLIC_SUBPACKAGES:
        assert inspect.ismodule(importlib.import_module(f"jupyter_dist.{name}"))


def test_an_experiments_public_names_are_its_results_and_actions():
    public = [name for name in dir(jd.Experiment) if not name.startswith("_")]
    # ~35, as Optuna's Study has ~30: 35 at the redesign, then the study's life (seed, reproduce, extend) and
    # what its trials used (utilization)
    assert len(public) <= 39, public
    for name in ("best", "trials", "history", "plot", "summary", "stop", "logs", "checkpoint", "to_mlflow"):
        assert name in public
    views_own = (
        "curve_metric",
        "curve_style",
        "curves_kept",
        "live_figure_title",
        "resume_is_news",
        "highlight",
    )
    assert not set(views_own) & set(public)
    for cls in (jd.AblationExperiment, jd.PopulationExperiment, jd.DataParallelExperiment):
        own = {name for name in dir(cls) if not name.startswith("_")} - set(public)
        assert len(own) <= 8, (
            cls.__name__,
            own,
        )  # a kind adds its own few results (summary, members, result)


def test_every_exception_the_package_defines_is_a_jupyter_dist_error():
    found = {}
    for module in _modules():
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = obj
    assert "jupyter_dist.errors.JupyterDistError" in found and len(found) > 10
    for where, cls in found.items():
        if issubclass(cls, TrialPruned):  # the stop signal report() raises in a trial, not an error
            continue
        if issubclass(cls, Warning):  # warned of, never raised (ReproduceWarning)
            continue
        assert issubclass(cls, JupyterDistError), where
