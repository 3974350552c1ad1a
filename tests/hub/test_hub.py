"""JupyterHub + Dask Gateway for real: a hub user's `%%distribute` cell runs on their own Gateway cluster (the
admin's configuration decides; the cell is the laptop's), the experiment is listed by the user's server, the
dashboard link works through the user's server, and another user can see or stop none of it."""

from __future__ import annotations

import json
import time

import nbformat
import pytest
from _kernel import execute, text
from hubtools import request

pytestmark = pytest.mark.timeout(600)

LAB_MIME = "application/vnd.jupyter-dist.experiment+json"

CELLS = [
    "%load_ext jupyter_dist",
    """%%distribute hpo --trials 6 --metric y --sampler random --pruner none
import time
from jupyter_dist import report, space
sp = {"x": space.uniform(0, 1)}
def train(x=0.0):
    for step in range(3):
        time.sleep(0.05)
        report(step=step, y=x * step)
""",
    """import json
import jupyter_dist
info = jupyter_dist.cluster_info()
print(json.dumps({"kind": info.kind, "name": info.name, "workers": info.workers, "id": exp.id,
                  "state": str(exp.state), "trials": len(exp.trials), "dashboard": exp.dashboard_link}))
""",
]


def _new_kernel(server: str, token: str, path: str) -> str:
    """A kernel for the notebook at ``path`` of that server, as opening it in JupyterLab starts one."""
    status, session = request(
        f"{server}/api/sessions",
        token,
        method="POST",
        body={"path": path, "type": "notebook", "name": path, "kernel": {"name": "python3"}},
    )
    assert status == 201, (status, session)
    return session["kernel"]["id"]


@pytest.fixture(scope="module")
def alice_run(hub):
    """alice logs in, starts her server and runs the notebook in a kernel there; what the last cell printed."""
    token = hub.login("alice")
    server = hub.start_server("alice")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    home = hub.root / "home" / "alice"
    nbformat.write(notebook, home / "hub.ipynb")
    kernel = _new_kernel(server, token, "hub.ipynb")
    ran = []
    for cell in nbformat.read(home / "hub.ipynb", as_version=4).cells:
        outputs = execute(server, token, kernel, cell.source)
        assert not [o for o in outputs if o["type"] == "error"], text(outputs) + hub.log()[-3000:]
        ran.append(outputs)
    views = sorted({mime for o in ran[1] for mime in o.get("data", {})})
    return {"token": token, "server": server, "kernel": kernel, "views": views, **json.loads(text(ran[-1]))}


def test_the_users_server_has_both_extensions(hub, alice_run):
    server, token = alice_run["server"], alice_run["token"]
    status, body = request(f"{server}/jupyter-dist/api/experiments", token)
    assert status == 200 and "experiments" in body  # the server extension answers
    status, page = request(f"{server}/lab", token)
    assert status == 200
    config = json.loads(page.split('id="jupyter-config-data"', 1)[1].split(">", 1)[1].split("</script>")[0])
    federated = {e["name"] for e in config["federated_extensions"]}
    assert "jupyter-dist" in federated and "jupyter-dist" not in config.get("disabled_labextensions", {})
    # ... so the kernels it starts draw runs with the extension's view, with no message from any page first.
    assert LAB_MIME in alice_run["views"], alice_run["views"]


def test_the_cell_ran_on_the_users_own_gateway_cluster(hub, alice_run):
    assert alice_run["kind"] == "Dask Gateway cluster"
    assert alice_run["workers"] == 2  # the admin's size (jupyter_dist.gateway.workers)
    assert alice_run["state"] == "completed" and alice_run["trials"] == 6
    status, clusters = request(
        f"{hub.gateway}/api/v1/clusters/", alice_run["token"], auth_scheme="jupyterhub"
    )
    assert status == 200, clusters
    assert alice_run["name"] in clusters
    assert clusters[alice_run["name"]]["options"] == {"worker_cores": 1}  # the admin's options
    status, report = request(
        f"{hub.gateway}/api/v1/clusters/{alice_run['name']}", alice_run["token"], auth_scheme="jupyterhub"
    )
    assert status == 200 and report["name"] == alice_run["name"]
    # ... and the user's Experiments endpoint lists the run, as it ended.
    status, listing = request(f"{alice_run['server']}/jupyter-dist/api/experiments", alice_run["token"])
    assert status == 200
    mine = [e for e in listing["experiments"] if e["id"] == alice_run["id"]]
    assert mine and mine[0]["state"] == "completed" and mine[0]["trials_done"] == 6
    # It ran on that cluster: its scheduler's address, through the gateway's proxy, names it.
    status, detail = request(
        f"{alice_run['server']}/jupyter-dist/api/experiments/{alice_run['id']}", alice_run["token"]
    )
    assert status == 200 and detail["about"]["cluster"].endswith(f"/{alice_run['name']}"), detail["about"]


def test_the_dashboard_link_goes_through_the_users_server(hub, alice_run):
    link = alice_run["dashboard"]
    assert link.startswith("/user/alice/proxy/"), link  # never a 127.0.0.1 link
    assert alice_run["name"] in link
    status, page = request(f"{hub.url}{link}", alice_run["token"])
    assert status == 200, (link, status, str(page)[:500])
    status, _ = request(f"{hub.url}{link}")  # without the user's token: to the login page, not the dashboard
    assert status in (302, 403)


def test_another_user_can_neither_see_nor_stop_it(hub, alice_run):
    bob = hub.login("bob")
    name, server, exp_id = alice_run["name"], alice_run["server"], alice_run["id"]
    status, clusters = request(f"{hub.gateway}/api/v1/clusters/", bob, auth_scheme="jupyterhub")
    assert status == 200 and name not in clusters
    status, _ = request(f"{hub.gateway}/api/v1/clusters/{name}", bob, auth_scheme="jupyterhub")
    assert status in (403, 404)
    status, _ = request(
        f"{hub.gateway}/api/v1/clusters/{name}", bob, method="DELETE", auth_scheme="jupyterhub"
    )
    assert status in (403, 404)
    status, _ = request(f"{hub.gateway}/api/v1/clusters/{name}", alice_run["token"], auth_scheme="jupyterhub")
    assert status == 200  # still there
    status, _ = request(f"{server}/jupyter-dist/api/experiments", bob)
    assert status == 403
    status, _ = request(f"{server}/jupyter-dist/api/experiments/{exp_id}/stop", bob, method="POST")
    assert status == 403
    status, _ = request(f"{server}{alice_run['dashboard'].removeprefix('/user/alice')}", bob)
    assert status == 403


GATEWAY_CLUSTER_OBJECT = """
import jupyter_dist
from dask_gateway import Gateway
from jupyter_dist import space
cluster = Gateway().new_cluster()
cluster.scale(1)
try:
    run = jupyter_dist.hpo(lambda x=0.0: x, {"x": space.uniform(0, 1)}, trials=2, metric="x", sampler="random",
                           cluster=cluster, progress=False)
    print(run.state, len(run.trials), cluster.name in jupyter_dist.cluster_info(cluster).name)
finally:
    cluster.shutdown()
"""


def test_a_gateway_cluster_object_is_used_with_its_own_security(hub, alice_run):
    """cluster=GatewayCluster: the client is made from the object, with its TLS credentials (0.3.1 connected to
    the bare scheduler_address and failed: 'Gateway expects a ssl_context argument')."""
    outputs = execute(alice_run["server"], alice_run["token"], alice_run["kernel"], GATEWAY_CLUSTER_OBJECT)
    assert text(outputs).split() == ["completed", "2", "True"], text(outputs)


ADAPTIVE = """
import json, threading, time
import jupyter_dist
from jupyter_dist import space

jupyter_dist.use_cluster("gateway", adapt=(1, 3))
client = jupyter_dist.get_client()
retired = []

def retire_a_busy_worker():  # mid-experiment, once the cluster has grown: one of the workers running a trial
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not retired:
        busy = [w for w, keys in client.processing().items() if keys]
        if len(client.scheduler_info(n_workers=-1)["workers"]) >= 2 and busy:
            retired.append(busy[0])
            client.retire_workers([busy[0]])
        time.sleep(0.2)

def slow(x=0.0):
    from distributed import get_worker
    print(get_worker().address)
    time.sleep(2.0)
    return x

threading.Thread(target=retire_a_busy_worker, daemon=True).start()
run = jupyter_dist.hpo(slow, {"x": space.uniform(0, 1)}, trials=24, metric="x", sampler="random", progress=False)
records = run.trial_records()
print(json.dumps({
    "states": sorted({r.state.value for r in records}), "trials": len(records),
    "workers": sorted({"".join(r.stdout).split()[0] for r in records if r.stdout}),
    "retired": retired, "attempts": max(r.attempts for r in records),
    "shown": repr(jupyter_dist.cluster_info()),
}))
"""


def test_an_adaptive_gateway_cluster_grows_into_the_run_and_a_retired_worker_loses_nothing(hub, alice_run):
    outputs = execute(alice_run["server"], alice_run["token"], alice_run["kernel"], ADAPTIVE, timeout=400)
    result = json.loads(text(outputs).strip().splitlines()[-1])
    assert result["trials"] == 24 and result["states"] == ["completed"], result  # nothing lost
    assert len({w.strip() for w in result["workers"]}) > 1, (
        result
    )  # it grew, and trials ran on the new workers
    assert result["retired"], result  # a worker was retired while running a trial...
    assert "adapting between 1 and 3 workers" in result["shown"]


ELASTIC = """
import json, os, tempfile, threading, time
import jupyter_dist

# The cluster set to adapt here (whatever the cells before did): it keeps 2 workers at least, so a worker
# retired is replaced, and the job grows back onto the new one at its next checkpoint (max_workers=2). 700
# steps: long enough (~35 s) for the gateway to start the replacement (at its next cluster heartbeat, 15 s
# apart: ~18 s after the retirement measured).
jupyter_dist.use_cluster("gateway", adapt=(2, 3))
client = jupyter_dist.get_client()
deadline = time.monotonic() + 120  # exactly 2 (an idle third, from a cell before, adapts away in ~10 s)
while time.monotonic() < deadline and len(client.scheduler_info(n_workers=-1)["workers"]) != 2:
    time.sleep(0.5)
before = sorted(client.scheduler_info(n_workers=-1)["workers"])
retired = []

def retire_a_rank_mid_job():  # once the job has trained a while: the worker running rank 1
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not retired:
        busy = sorted(w for w, keys in client.processing().items() if any("-rank-1-" in k for k in keys))
        records = exp_holder and exp_holder[0].trial_records()
        if busy and records and records[0].steps >= 12:
            asked = time.time()
            client.retire_workers([busy[0]])  # close_workers=True: the worker process ends
            retired.append({"worker": busy[0], "asked": asked, "took": time.time() - asked})
        time.sleep(0.2)

def training(steps=700):
    import time
    import torch
    import jupyter_dist as jd
    from distributed import get_worker
    torch.manual_seed(0)
    model = jd.prepare(torch.nn.Linear(16, 1))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    state = {"model": model, "optimiser": optimiser}
    restored = jd.restore(state)
    for step in range(0 if restored is None else restored.step + 1, steps):
        optimiser.zero_grad()
        model(torch.randn(8, 16)).sum().backward()  # an all-reduce every step
        optimiser.step()
        jd.report(step=step, world=jd.world_size())
        if step % 5 == 0:
            jd.checkpoint(step, state)
        time.sleep(0.05)
    return {"world": jd.world_size(), "worker": get_worker().address}

exp_holder = []
def keep(exp):  # progress=: a silent view that hands the retiring thread the running experiment
    exp_holder.append(exp)
    class View:
        def start(self): pass
        def idle(self): pass
        def finish(self): pass
    return View()

threading.Thread(target=retire_a_rank_mid_job, daemon=True).start()
started = time.monotonic()
run = jupyter_dist.data_parallel(training, workers=2, min_workers=1, max_workers=2, progress=keep,
                                 store=False, checkpoint_dir=os.path.abspath(tempfile.mkdtemp(dir=".")))
took = time.monotonic() - started
restarts = run.restarts
print(json.dumps({
    "state": run.state.value, "error": run.error, "took": took, "retired": retired, "before": before,
    "result": run.result if run.state.value == "completed" else None,
    "after": sorted(client.scheduler_info(n_workers=-1)["workers"]),
    "shown": repr(jupyter_dist.cluster_info()),
    "restarts": [dict(r, at=r["at"].timestamp())
                 for r in restarts.drop(columns="trial_id").to_dict("records")],
}))
"""


def test_a_worker_an_adaptive_gateway_cluster_retires_mid_job_does_not_fail_an_elastic_job(hub, alice_run):
    """Retired with client.retire_workers, as the adaptive test above: the gateway's own scale-down never
    picks a worker that runs a rank (Dask's workers_to_close, which its adaptive loop follows, keeps busy
    workers), so a rank's worker is retired mid-job only when someone asks (retire_workers, or
    cluster.scale(n) below the busy workers). The cluster adapting replaces it, and the job, gone on alone,
    grows back onto the new worker."""
    outputs = execute(alice_run["server"], alice_run["token"], alice_run["kernel"], ELASTIC, timeout=400)
    result = json.loads(text(outputs).strip().splitlines()[-1])
    assert result["state"] == "completed", result
    assert "adapting between 2 and 3 workers" in result["shown"], result
    assert len(result["before"]) == 2, result
    (retired,) = result["retired"]  # rank 1's worker, retired while it trained...
    lost, *grown = result["restarts"]
    # ... and the job went on from its checkpoint on rank 0 alone, naming the retired worker.
    assert lost["lost"] == [1] and (lost["world_before"], lost["world_after"]) == (2, 1), result
    assert f"rank 1 (worker {retired['worker']}) lost at step" in lost["message"], lost
    assert lost["from_step"] % 5 == 0 and lost["lost_at"] >= 12, lost
    assert lost["at"] - retired["asked"] < 10, result  # ~0.9 s measured
    # The cluster, adapting, replaced the worker (2 at least) and the job grew back onto it at a checkpoint.
    assert retired["worker"] not in result["after"] and len(result["after"]) >= 2, result
    (grew,) = grown
    assert grew["why"] == "more workers are free" and grew["lost"] == [], grew
    assert (grew["world_before"], grew["world_after"]) == (1, 2) and grew["steps_redone"] == 0, grew
    assert result["result"]["world"] == 2, result  # it ended on both ranks again


def test_the_gateway_cluster_goes_with_the_kernel(hub, alice_run):
    server, token = alice_run["server"], alice_run["token"]
    status, _ = request(f"{server}/api/kernels/{alice_run['kernel']}", token, method="DELETE")
    assert status == 204
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, clusters = request(f"{hub.gateway}/api/v1/clusters/", token, auth_scheme="jupyterhub")
        if alice_run["name"] not in clusters:
            return
        time.sleep(1)
    raise AssertionError(f"the cluster outlived the kernel: {clusters}")


KEPT = """
import dask, jupyter_dist
dask.config.set({"jupyter_dist.gateway.shutdown-on-close": False})
print(jupyter_dist.cluster_info().name)
"""


def test_a_cluster_kept_past_its_kernel_is_used_again_by_the_next_one(hub):
    """jupyter_dist.gateway.shutdown-on-close: false (here set by the user; an admin sets it in the image)."""
    token = hub.tokens.get("bob") or hub.login("bob")
    server = hub.start_server("bob")
    first = _new_kernel(server, token, "kept-1.ipynb")
    name = text(execute(server, token, first, KEPT)).strip()
    assert request(f"{server}/api/kernels/{first}", token, method="DELETE")[0] == 204
    time.sleep(3)  # the kernel is gone; a cluster shut down with it would be stopping by now
    status, clusters = request(f"{hub.gateway}/api/v1/clusters/", token, auth_scheme="jupyterhub")
    assert name in clusters, clusters
    second = _new_kernel(server, token, "kept-2.ipynb")
    assert text(execute(server, token, second, KEPT)).strip() == name  # the same cluster, not a new one
    status, _ = request(
        f"{hub.gateway}/api/v1/clusters/{name}", token, method="DELETE", auth_scheme="jupyterhub"
    )
    assert status == 204


BAD_OPTION = """
import dask, jupyter_dist
dask.config.set({"jupyter_dist.gateway.options": {"gpus": 2}})
try:
    jupyter_dist.get_client("gateway")
except jupyter_dist.ClusterError as problem:
    print(problem)
"""


def test_an_option_the_gateway_does_not_offer_is_refused_by_name(hub):
    token = hub.tokens.get("bob") or hub.login("bob")
    server = hub.start_server("bob")
    kernel = _new_kernel(server, token, "bad-option.ipynb")
    said = text(execute(server, token, kernel, BAD_OPTION)).strip()
    assert said == (
        "jupyter_dist.gateway.options names 'gpus', which this gateway does not offer (it offers: worker_cores)"
    )
