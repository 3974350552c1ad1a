"""jupyter_dist.slurm settings as the worker jobs they make, without a Slurm (test_slurm.py runs one)."""

from __future__ import annotations

import dask
import pytest

from jupyter_dist.cluster._sizing import grown_span
from jupyter_dist.cluster.slurm._settings import cluster_kwargs, lifetime_args, walltime_seconds
from jupyter_dist.errors import ArgumentError


@pytest.mark.parametrize(
    ("walltime", "seconds"),
    [
        ("30", 1800),
        ("5:30", 330),
        ("01:00:00", 3600),
        ("2-00", 172800),
        ("1-02:03", 93780),
        ("1-0:0:5", 86405),
    ],
)
def test_slurm_s_time_formats(walltime, seconds):
    assert walltime_seconds(walltime) == seconds


def test_a_walltime_that_is_not_one_is_named():
    with pytest.raises(ArgumentError, match="walltime='an hour' is not a Slurm time"):
        walltime_seconds("an hour")


def test_workers_retire_before_their_walltime_staggered():
    # An hour: 6 minutes before, each worker within ±3 minutes of that.
    assert lifetime_args("01:00:00") == ["--lifetime", "3240s", "--lifetime-stagger", "180s"]
    # A day: at most 10 minutes before; a minute: at least 30 s before.
    assert lifetime_args("1-00:00:00")[1] == f"{86400 - 600}s"
    assert lifetime_args("1") == ["--lifetime", "30s", "--lifetime-stagger", "15s"]
    with pytest.raises(ArgumentError, match="leaves a worker no time"):
        lifetime_args("0:20")


def test_settings_become_the_job_s_directives_and_the_worker_s_arguments():
    kwargs = cluster_kwargs(
        {
            "queue": "gpu",
            "account": "proj1",
            "cores": 8,
            "memory": "32GiB",
            "gpus": 2,
            "job-extra": ["--exclusive"],
        }
    )
    assert kwargs["queue"] == "gpu" and kwargs["account"] == "proj1" and kwargs["processes"] == 1
    assert kwargs["job_extra_directives"] == ["--exclusive", "--gres=gpu:2"]
    args = kwargs["worker_extra_args"]
    assert args[args.index("--resources") + 1] == "GPU=2"  # what gpus_per_trial= asks the workers for
    assert "--lifetime" in args
    assert kwargs["scheduler_options"]["dashboard_address"] == ":0"
    assert kwargs["log_directory"].endswith("slurm-logs")


def test_an_interface_the_admin_names_is_used_by_scheduler_and_workers():
    kwargs = cluster_kwargs({"interface": "ib0"})
    assert kwargs["interface"] == "ib0" and "host" not in kwargs["scheduler_options"]


def test_dask_jobqueue_s_own_settings_fill_in_what_jupyter_dist_leaves_unset():
    with dask.config.set(
        {"jobqueue.slurm.cores": 4, "jobqueue.slurm.memory": "8GB", "jobqueue.slurm.walltime": "2:00:00"}
    ):
        kwargs = cluster_kwargs({"memory": "16GB"})
    assert (kwargs["cores"], kwargs["memory"], kwargs["walltime"]) == (4, "16GB", "2:00:00")


def test_an_unknown_setting_is_named_with_the_known_ones():
    with pytest.raises(ArgumentError, match="jupyter_dist.slurm has no setting 'partition'.*queue"):
        cluster_kwargs({"partition": "gpu"})
    with pytest.raises(ArgumentError, match="gpus must be a whole number"):
        cluster_kwargs({"gpus": "two"})


def test_the_default_size_grows_to_what_an_experiment_wants_with_room_for_a_trial_s_ranks():
    assert grown_span(None, None, None) == (0, 2)
    assert grown_span((0, 2), 8, None) == (0, 8)
    assert grown_span((0, 8), 4, None) is None  # never shrunk
    assert grown_span((0, 8), 8, 4) is None  # a 4-rank run holds its workers itself (cluster/_growth.py)
    assert grown_span((0, 2), 2, 4) == (0, 4)  # room for a trial's ranks
    assert grown_span(None, 20, 4, limit=6) == (0, 6)


def test_without_dask_jobqueue_the_message_names_the_extra(monkeypatch):
    import sys

    from jupyter_dist.cluster.slurm import slurm_client
    from jupyter_dist.errors import ClusterError

    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)  # as if it were not installed
    with pytest.raises(ClusterError, match=r"pip install 'jupyter_dist\[slurm\]'"):
        slurm_client()
