"""The store on a network filesystem: in the rollback journal, with no -wal or -shm file, a reader in another
process reading while a run writes; and on a real FUSE network mount (sshfs over loopback).

A real NFS mount is not tested: it needs the kernel's nfs client, which the machines this suite runs on lack (no
nfs in /proc/filesystems, no modules to load). sshfs is a network filesystem served through FUSE, which they
have: its type (fuse.sshfs) is detected from the real mountinfo like NFS's would be.
"""

import multiprocessing
import os
import shutil
import socket
import subprocess
import time

import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.protocol import ExperimentState, Objective, TrialState
from jupyter_dist.store import ExperimentDefinition, Journal, StoreReader, TrialRecord
from jupyter_dist.store._filesystem import mount_of
from jupyter_dist.store._sqlite import Database

SIDE_FILES = ("-wal", "-shm")
TRIALS, STEPS = 40, 50


def _side_files(path: str) -> list[str]:
    return [path + end for end in SIDE_FILES if os.path.exists(path + end)]


def _write_slowly(path: str) -> None:
    """A run that writes for ~2 s: a trial with its reports every 50 ms, flushed every FLUSH_INTERVAL_S."""
    definition = ExperimentDefinition("hpo", "slow-writer", Objective("acc"), {}, total=TRIALS)
    journal = Journal(path, definition, {}, name_given=True)
    for trial_id in range(TRIALS):
        rec = TrialRecord(trial_id, {"i": trial_id})
        journal.trial_changed(rec)
        journal.reports(trial_id, 0, [[step, {"acc": step / STEPS}, time.time()] for step in range(STEPS)])
        rec.state, rec.value = TrialState.COMPLETED, 1.0
        journal.trial_changed(rec)
        time.sleep(0.05)
    journal.close(ExperimentState.COMPLETED, None, time.time())
    if journal.failed:
        raise SystemExit(journal.failed)


def _read_while_written(path: str, done, out) -> None:
    """The server extension's reader in a process of its own, as the server is: the listing and every report from
    the start, over and over, until the writer is done; what it saw, and any side file it found, go to ``out``."""
    reader = StoreReader(path)
    seen, side, slowest = [], set(), 0.0
    try:
        while True:
            finished = done.is_set()
            started = time.monotonic()
            listing = reader.experiments()["experiments"]
            if listing:
                page = reader.metrics_page(listing[0]["id"], 0, 10_000)
                seen.append((listing[0]["trials_done"], len(page["rows"])))
            slowest = max(slowest, time.monotonic() - started)
            side.update(_side_files(path))
            if finished:
                break
            time.sleep(0.02)
        out.put({"seen": seen, "side": sorted(side), "slowest": slowest, "error": None})
    except Exception as exc:  # noqa: BLE001 - reported to the test, which fails with it
        out.put({"error": f"{type(exc).__name__}: {exc}"})


def test_a_reader_process_reads_while_a_writer_process_writes_a_rollback_journal_store(tmp_path, monkeypatch):
    """Forced to the mode a network filesystem gets: the reader never fails nor waits long, and sees the run
    grow; the file stays in DELETE mode with no -wal or -shm beside it."""
    import dask

    monkeypatch.setenv("DASK_JUPYTER_DIST__STORE_JOURNAL", "delete")  # for the spawned processes
    monkeypatch.setitem(dask.config.config["jupyter_dist"], "store-journal", "delete")
    path = str(tmp_path / "store.sqlite")
    Database(path).close()  # the file exists before the reader looks at it
    ctx = multiprocessing.get_context("spawn")
    done, out = ctx.Event(), ctx.Queue()
    reader = ctx.Process(target=_read_while_written, args=(path, done, out))
    writer = ctx.Process(target=_write_slowly, args=(path,))
    reader.start()
    writer.start()
    writer.join(120)
    done.set()
    result = out.get(timeout=120)
    reader.join(30)
    assert writer.exitcode == 0
    assert result["error"] is None, result["error"]
    seen = result["seen"]
    # Read while it was written: listings part-way through, never going back, and the whole run at the end.
    assert sum(0 < n_trials < TRIALS for n_trials, _ in seen) >= 3, seen
    assert seen == sorted(seen)
    assert seen[-1] == (TRIALS, TRIALS * STEPS)
    assert result["slowest"] < 5.0  # waits on a commit are short, far from the 30 s busy timeout
    assert result["side"] == [] and _side_files(path) == []
    db = Database(path)
    try:
        assert db.journal == "delete" == db.conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        db.close()


# --- a real FUSE network filesystem: sshfs against an sshd of the test's own on 127.0.0.1 ---------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


@pytest.fixture
def sshfs_folder(tmp_path):
    """A folder of ``tmp_path`` served by an sshd of this test's own and mounted back with sshfs (FUSE): a
    network filesystem over loopback. It fails, saying why, where sshd or sshfs is missing or does not start
    (`make sshfs` installs them, and CI does); it is skipped only on a machine that cannot mount FUSE at all."""
    install = "scripts/install_system_packages.sh sshfs installs them"
    sshd = shutil.which("sshd") or shutil.which("sshd", path="/usr/sbin:/usr/local/sbin")
    sshfs, fusermount = shutil.which("sshfs"), shutil.which("fusermount3") or shutil.which("fusermount")
    if not (sshd and sshfs and fusermount and shutil.which("ssh-keygen")):
        pytest.fail(
            f"sshd, sshfs, fusermount and ssh-keygen are needed to mount sshfs over loopback ({install})"
        )
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse: this machine (or container) cannot mount a FUSE filesystem")
    if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
        pytest.fail(f"sshd run as root needs /run/sshd, its privilege separation folder ({install} makes it)")
    keys = tmp_path / "ssh"
    keys.mkdir()
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True)
    shutil.copy(keys / "client.pub", keys / "authorized_keys")
    port = _free_port()
    (keys / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {keys / 'host'}\n"
        f"AuthorizedKeysFile {keys / 'authorized_keys'}\nPubkeyAuthentication yes\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nStrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\n"
        f"PidFile {keys / 'sshd.pid'}\nSubsystem sftp internal-sftp\n"
    )
    served, mounted = tmp_path / "served", tmp_path / "mounted"
    served.mkdir()
    mounted.mkdir()
    sshd_log, sshfs_log = open(keys / "sshd.log", "w"), open(keys / "sshfs.log", "w")  # noqa: SIM115
    # -D: sshd stays this child (stopped by its pid below); -e: its log in sshd.log.
    daemon = subprocess.Popen([sshd, "-D", "-e", "-f", str(keys / "sshd_config")], stderr=sshd_log)
    mount = None
    try:
        if not _wait(lambda: _listening(port) or daemon.poll() is not None, 15) or daemon.poll() is not None:
            pytest.fail(f"sshd did not start: {(keys / 'sshd.log').read_text()[-500:]}")
        options = f"IdentityFile={keys / 'client'},StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,BatchMode=yes"
        # -f: sshfs stays in the foreground, this child, until unmounted.
        mount = subprocess.Popen(
            [sshfs, "-f", "-p", str(port), "-o", options, f"127.0.0.1:{served}", str(mounted)],
            stdout=sshfs_log,
            stderr=sshfs_log,
        )

        def is_mounted():
            found = mount_of(mounted)
            return found is not None and found.point == str(mounted) and found.fstype == "fuse.sshfs"

        if not _wait(lambda: is_mounted() or mount.poll() is not None, 20) or not is_mounted():
            pytest.fail(f"sshfs could not mount over loopback: {(keys / 'sshfs.log').read_text()[-500:]}")
        yield mounted, served
    finally:
        if mount is not None:
            if subprocess.run([fusermount, "-u", str(mounted)], capture_output=True).returncode != 0:
                subprocess.run([fusermount, "-u", "-z", str(mounted)], capture_output=True)
            try:
                mount.wait(15)
            except subprocess.TimeoutExpired:
                mount.kill()
                mount.wait()
        daemon.terminate()
        try:
            daemon.wait(15)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        sshd_log.close()
        sshfs_log.close()


def steady(lr=0.1):
    import time

    for step in range(30):
        jd.report(step=step, acc=lr * step)
        time.sleep(0.05)
    return {"acc": lr * 30}


def _watch_listing(path: str, done, out) -> None:
    """The server extension's reader in another process: the listing until the run is done, then its reports."""
    reader = StoreReader(path)
    states = []
    try:
        while not done.is_set():
            listing = reader.experiments()["experiments"]
            if listing:
                states.append((listing[0]["state"], listing[0]["trials_done"]))
            time.sleep(0.1)
        listing = reader.experiments()["experiments"]
        states.append((listing[0]["state"], listing[0]["trials_done"]))
        reports = len(reader.metrics_page(listing[0]["id"], 0, 10_000)["rows"])
        curves = reader.curves(listing[0]["id"])["trials"]
        out.put({"states": states, "reports": reports, "curves": len(curves), "error": None})
    except Exception as exc:  # noqa: BLE001 - reported to the test, which fails with it
        out.put({"error": f"{type(exc).__name__}: {exc}"})


def test_an_experiment_stored_on_a_real_sshfs_mount_runs_and_is_read_by_the_servers_reader(
    sshfs_folder, run_hpo
):
    mounted, served = sshfs_folder
    store = str(mounted / "jupyter_dist" / "experiments.sqlite")
    Database(store).close()  # auto: the real mountinfo says fuse.sshfs
    ctx = multiprocessing.get_context("spawn")
    done, out = ctx.Event(), ctx.Queue()
    watcher = ctx.Process(target=_watch_listing, args=(store, done, out))
    watcher.start()
    try:
        exp = run_hpo(
            steady, {"lr": space.uniform(0.01, 0.3)}, trials=4, metric="acc", store=store, pruner=None
        )
    finally:
        done.set()
    seen = out.get(timeout=120)
    watcher.join(30)
    assert exp.state == "completed" and not exp.record.store_problem
    assert seen["error"] is None, seen["error"]
    assert seen["states"][-1] == ("completed", 4)
    assert any(state == "running" for state, _ in seen["states"]), seen["states"]  # read while it ran
    assert seen["reports"] == 120 and seen["curves"] == 4
    loaded = jd.load(exp.id, store=store)
    assert list(loaded.history["value"]) == list(exp.history["value"])
    db = Database(store)
    try:
        assert db.journal == "delete" == db.conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        db.close()
    # What the server behind the mount holds: the store file and nothing beside it.
    assert sorted(os.listdir(served / "jupyter_dist")) == ["experiments.sqlite"]
