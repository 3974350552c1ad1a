"""One family of errors: everything jupyter_dist raises is a JupyterDistError; the stop signal is not an error."""

import inspect

import pytest

import jupyter_dist as jd
from jupyter_dist import errors


def test_every_exception_class_of_the_package_derives_from_jupyter_dist_error():
    classes = [
        obj for _, obj in inspect.getmembers(errors, inspect.isclass) if obj.__module__ == errors.__name__
    ]
    exceptions = [c for c in classes if issubclass(c, Exception)]
    assert len(exceptions) >= 10
    assert all(issubclass(c, jd.JupyterDistError) for c in exceptions)
    # the stop signal is a BaseException on purpose: `except Exception` in a training loop must not swallow it
    assert not issubclass(jd.TrialPruned, Exception)


def test_bad_arguments_raise_our_error_and_still_the_builtin_callers_caught():
    with pytest.raises(jd.ArgumentError, match="parallel=0"):
        jd.hpo(lambda x=0: x, {"x": jd.space.uniform(0, 1)}, metric="m", parallel=0)
    with pytest.raises(ValueError, match="mode='up'"):
        jd.hpo(lambda x=0: x, {"x": jd.space.uniform(0, 1)}, metric="m", mode="up")
    with pytest.raises(TypeError, match="must be callable"):
        jd.hpo(3, {}, metric="m")
    with pytest.raises(jd.SearchSpaceError):
        jd.space.choice("abc")


def test_use_cluster_refuses_workers_for_a_cluster_it_does_not_start():
    with pytest.raises(jd.ArgumentError, match="workers= sizes the embedded cluster"):
        jd.use_cluster("tcp://127.0.0.1:1", workers=2)
    with pytest.raises(jd.ArgumentError, match="workers=0"):
        jd.use_cluster("local", workers=0)


def test_what_a_caller_can_catch_is_exported_and_what_never_reaches_one_is_not():
    with pytest.raises(jd.NotInStore, match="nothing has been recorded there yet"):
        jd.load("nope")
    with pytest.raises(LookupError):
        jd.load("nope")
    # Turned into ExperimentFailed by the trial loop, or raised on a worker: not exported...
    for name in ("MetricError", "ClusterLost", "RendezvousError"):
        assert name not in jd.__all__
        assert getattr(jd, name) is getattr(errors, name)  # ...but code written against 0.4 still imports it
    from jupyter_dist import MetricError  # noqa: F401 - the import itself is the test

    exported = set(errors.__all__) - {"MetricError", "ClusterLost", "RendezvousError", "NotRunning"}
    assert exported <= set(jd.__all__)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchError'"):
        jd.NoSuchError  # noqa: B018


SCRIPT = """
import jupyter_dist as jd
from jupyter_dist import space


def train(x=0.5):
    return x


def main():
    exp = jd.hpo(train, {"x": space.uniform(0, 1)}, trials=2, metric="score", progress=False, store=False)
    print("best", exp.best.value)


"""


@pytest.mark.parametrize(
    "tail, guarded",
    [
        ("main()\n", False),
        ("if True:\n    main()\n", False),
        ('if __name__ == "__main__":\n    main()\n', True),
    ],
)
def test_a_script_that_starts_the_embedded_cluster_unguarded_is_told_the_fix(tmp_path, tail, guarded):
    import os
    import subprocess
    import sys

    script = tmp_path / "search.py"
    script.write_text(SCRIPT + tail)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=dict(os.environ)
    )
    if guarded:
        assert done.returncode == 0, done.stderr
        assert "best" in done.stdout
    else:
        assert done.returncode == 1
        line = SCRIPT.count("\n") + tail.count("\n")  # the call of main() at the script's top level
        assert f"search.py, line {line}, starts an experiment" in done.stderr
        assert 'if __name__ == "__main__":' in done.stderr.splitlines()[-1]
        assert "ClusterError" in done.stderr and "EmbeddedNanny" not in done.stderr
