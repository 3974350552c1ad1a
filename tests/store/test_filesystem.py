"""Which filesystem the store lies on (mountinfo read as Linux writes it), and the journal mode that follows."""

import logging
import os
import sqlite3

import pytest

from jupyter_dist.errors import ArgumentError
from jupyter_dist.store import _filesystem
from jupyter_dist.store._filesystem import journal_mode, mount_of, parse_mountinfo
from jupyter_dist.store._sqlite import Database

# Lines as a hub's user server or an HPC login node has them (proc(5)): optional fields before "-", per-mount
# options before them, super options after the source, octal escapes in paths.
MOUNTINFO = r"""22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:5 - proc proc rw
30 22 0:45 / /home rw,relatime shared:20 - nfs4 fs1:/export/home rw,vers=4.2,hard,proto=tcp,local_lock=none
31 22 0:46 / /scratch rw,relatime shared:21 master:3 - lustre 10.0.0.1@o2ib:/scratch rw,flock,lazystatfs
32 22 0:47 / /project rw,relatime - lustre 10.0.0.1@o2ib:/project rw,localflock
33 22 0:48 / /mnt/team\040share rw,relatime - cifs //files/team\040share rw,vers=3.1.1
34 22 0:49 / /data rw,relatime - ext4 /dev/sdb1 rw
35 34 0:50 / /data/remote rw,relatime - fuse.sshfs me@host:/data rw,user_id=1000,group_id=1000
36 22 0:51 / /media/usb rw,relatime - fuseblk /dev/sdc1 rw,user_id=0,group_id=0
37 22 0:52 / /old rw,relatime - nfs server:/old rw,vers=3,nolock
38 22 0:53 / /old rw,relatime - tmpfs tmpfs rw
39 22 0:54 / /gpfs/fs1 rw,relatime - gpfs fs1 rw
40 22 0:55 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw,size=1048576k
"""


@pytest.mark.parametrize(
    ("path", "point", "fstype", "network"),
    [
        ("/home/ada/.local/share/jupyter/jupyter_dist/experiments.sqlite", "/home", "nfs4", True),
        ("/home", "/home", "nfs4", True),
        ("/home2/ada/store.sqlite", "/", "ext4", False),  # a prefix of the name, not a folder above it
        ("/scratch/ada/store.sqlite", "/scratch", "lustre", True),
        ("/mnt/team share/store.sqlite", "/mnt/team share", "cifs", True),  # \040 is a space
        ("/data/store.sqlite", "/data", "ext4", False),
        ("/data/remote/x/store.sqlite", "/data/remote", "fuse.sshfs", True),  # the longest point wins
        ("/media/usb/store.sqlite", "/media/usb", "fuseblk", False),  # a local disk through FUSE
        ("/old/store.sqlite", "/old", "tmpfs", False),  # mounted over the NFS one: the later mount hides it
        ("/gpfs/fs1/store.sqlite", "/gpfs/fs1", "gpfs", True),
        ("/tmp/store.sqlite", "/tmp", "tmpfs", False),
    ],
)
def test_the_mount_holding_a_path_is_the_longest_mount_point_above_it(path, point, fstype, network):
    mount = mount_of(path, MOUNTINFO)
    assert (mount.point, mount.fstype, mount.network) == (point, fstype, network)


def test_mountinfo_gives_each_mount_its_source_and_options_both_per_mount_and_super():
    mounts = {m.point: m for m in parse_mountinfo(MOUNTINFO + "not a mountinfo line\n\n")}
    assert mounts["/mnt/team share"].source == "//files/team share"
    assert {"rw", "relatime", "vers=4.2", "local_lock=none"} <= mounts["/home"].options
    assert not mounts["/home"].local_locks  # local_lock=none: locks go to the server
    assert mounts["/project"].local_locks  # lustre localflock
    assert len(parse_mountinfo(MOUNTINFO)) == MOUNTINFO.count("\n")


def test_symbolic_links_are_followed_to_the_mount_they_lead_into(tmp_path):
    link = tmp_path / "store-link"
    link.symlink_to("/home/ada/stores")  # need not exist: the path it names decides
    mount = mount_of(link / "experiments.sqlite", MOUNTINFO)
    assert (mount.point, mount.fstype) == ("/home", "nfs4")


def test_this_machines_temporary_folder_is_local_and_keeps_wal(tmp_path):
    if not os.path.exists(_filesystem.MOUNTINFO):
        pytest.skip("no /proc/self/mountinfo here (not Linux): the filesystem type is not detected")
    mount = mount_of(tmp_path)
    assert mount is not None and mount.point and mount.fstype
    assert not mount.network, f"{tmp_path} is on {mount.fstype} at {mount.point}"
    assert not mount_of("/").network
    assert journal_mode(tmp_path / "store.sqlite", "auto") == ("wal", mount)


def _network_mountinfo(tmp_path, monkeypatch, fstype="nfs4", options="rw,vers=4.2"):
    """This process's mountinfo, plus ``tmp_path`` mounted as a network filesystem."""
    with open(_filesystem.MOUNTINFO) as f:
        real = f.read()
    fake = tmp_path / "mountinfo"
    point = os.path.realpath(tmp_path).replace(" ", r"\040")
    fake.write_text(real + f"999 1 0:99 / {point} rw,relatime - {fstype} server:/export {options}\n")
    monkeypatch.setattr(_filesystem, "MOUNTINFO", str(fake))


def test_a_store_on_a_network_filesystem_is_kept_in_the_rollback_journal_and_says_so_once(
    tmp_path, monkeypatch, caplog
):
    if not os.path.exists(_filesystem.MOUNTINFO):
        pytest.skip("no /proc/self/mountinfo here (not Linux)")
    _network_mountinfo(tmp_path, monkeypatch, options="rw,vers=3,nolock")
    path = tmp_path / "experiments.sqlite"
    with caplog.at_level(logging.INFO, logger="jupyter_dist"):
        for _ in range(3):  # a reader opens the store for every request: one line, not one per open
            db = Database(path)
            assert db.journal == "delete"
            assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
            assert db.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
            db.close()
    said = [r.getMessage() for r in caplog.records if "network filesystem" in r.getMessage()]
    assert len(said) == 1
    assert f"{path} is on a network filesystem (nfs4 at {os.path.realpath(tmp_path)})" in said[0]
    assert "rollback journal mode (DELETE)" in said[0] and "mounted nolock" in said[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["experiments.sqlite", "mountinfo"]


def _journal_of(path, journal=None) -> str:
    db = Database(path, journal=journal)
    db.close()
    return db.journal


def test_the_setting_decides_over_the_detection(tmp_path, monkeypatch, caplog):
    import dask

    path = tmp_path / "store.sqlite"
    assert _journal_of(path, "delete") == "delete"
    assert _journal_of(path, "wal") == "wal"
    with pytest.raises(ArgumentError, match="jupyter_dist.store-journal='rollback': one of auto"):
        Database(path, journal="rollback")
    with dask.config.set({"jupyter_dist.store-journal": "delete"}):
        assert _journal_of(path) == "delete"
    if os.path.exists(_filesystem.MOUNTINFO):
        _network_mountinfo(tmp_path, monkeypatch)
        with dask.config.set({"jupyter_dist.store-journal": "wal"}), caplog.at_level(logging.INFO):
            assert _journal_of(path) == "wal"
        assert "kept in WAL mode, as dask config jupyter_dist.store-journal says" in caplog.text


def test_a_wal_store_another_process_holds_open_is_read_in_wal_until_it_lets_go(tmp_path, caplog):
    """Leaving WAL needs the file to itself (SQLite refuses at once, without waiting): the store still opens."""
    path = tmp_path / "store.sqlite"
    Database(path, journal="wal").close()
    other = sqlite3.connect(path)
    other.execute("SELECT count(*) FROM experiments").fetchone()
    with caplog.at_level(logging.WARNING, logger="jupyter_dist"):
        db = Database(path, journal="delete")
    assert db.journal == "wal" and db.experiment_rows() == []
    assert "stays in WAL mode for now (DELETE wanted): another process has it open" in caplog.text
    db.close()
    other.close()
    db = Database(path, journal="delete")
    assert db.journal == "delete"
    db.close()
    assert not (tmp_path / "store.sqlite-wal").exists() and not (tmp_path / "store.sqlite-shm").exists()
