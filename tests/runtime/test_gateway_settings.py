"""cluster="gateway" says what is wrong before any cluster starts: a size that cannot be, no gateway configured.
(The gateway itself, with JupyterHub, is exercised for real in tests/hub.)"""

import dask
import pytest

import jupyter_dist as jd
from jupyter_dist.cluster._sizing import check_sizing


def test_sizes_are_read_from_a_tuple_a_string_pair_or_the_admins_mapping():
    assert check_sizing(None, (0, 20)) == (0, 20)
    assert check_sizing(None, ["1", "3"]) == (1, 3)
    assert check_sizing(None, "1,3") == (1, 3)  # %distribute_cluster gateway --adapt 1,3
    assert check_sizing(None, {"minimum": 2, "maximum": 5}) == (2, 5)  # jupyter_dist.gateway.adapt in YAML
    assert check_sizing(4, None) is None


@pytest.mark.parametrize(
    ("workers", "adapt", "message"),
    [
        (-1, None, "workers= must be a whole number >= 0; got -1"),
        (None, (5, 2), "adapt= needs 0 <= minimum <= maximum and maximum > 0; got 5, 2"),
        (None, (0, 0), "adapt= needs 0 <= minimum <= maximum and maximum > 0; got 0, 0"),
        (None, "0-20", r"adapt= takes \(minimum, maximum\) workers, like \(0, 20\) or '0,20'; got '0-20'"),
    ],
)
def test_impossible_sizes_are_refused_by_name(workers, adapt, message):
    with pytest.raises(jd.ArgumentError, match=message):
        jd.use_cluster("gateway", workers=workers, adapt=adapt)


def test_no_gateway_configured_is_a_clear_cluster_error():
    with (
        dask.config.set({"gateway.address": None}),
        pytest.raises(
            jd.ClusterError,
            match=r"could not start a Dask Gateway cluster \(gateway.address=None\): .*address",
        ),
    ):
        jd.get_client("gateway")


def test_the_shipped_defaults_are_in_dask_config():
    assert dask.config.get("jupyter_dist.gateway.shutdown-on-close") is True
    assert dask.config.get("jupyter_dist.gateway.options") == {}
    assert dask.config.get("jupyter_dist.cluster") is None
