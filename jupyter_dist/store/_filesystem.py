"""What filesystem the store's file lies on, and the journal mode SQLite keeps it in there.

WAL (the default) lets readers read while a run writes, but it keeps its index in a memory-mapped ``-shm`` file
that every connection must see the same bytes of: on a network filesystem (NFS, Lustre, SMB...) two hosts do not,
and SQLite's documentation says WAL "does not work over a network filesystem". Hubs and HPC sites put home
directories, and so Jupyter's data directory and the default store, on exactly those. There the store uses the
rollback journal (``journal_mode=DELETE``), which needs only file locks: readers and the writer take turns on the
file (a batch's commit waits for a read in progress, a read for a commit, each up to the busy timeout), and
nothing is kept in shared memory.

Detection is Linux's: the mount holding the path, from ``/proc/self/mountinfo`` (the longest mount point that
contains the resolved path; the latest of several at one point, which hides the others). Elsewhere (macOS,
Windows) the type is not known and the store keeps WAL; dask config ``jupyter_dist.store-journal`` (auto, wal,
delete) decides instead of the detection anywhere.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

from ..errors import ArgumentError

MOUNTINFO = "/proc/self/mountinfo"
JOURNAL_MODES = ("auto", "wal", "delete")

# Filesystems whose files other hosts write too, or that a user-space or remote server serves: none of them gives
# the shared, coherent memory map WAL needs. Shared-disk cluster filesystems (ocfs2, gfs2) count: their nodes see
# one disk but not one page cache. 9p and virtiofs share a host's folder into a VM or WSL, where SQLite's WAL is
# known to break. Every FUSE filesystem counts ("fuse", "fuse.<name>": sshfs, s3fs, gcsfuse, rclone, juicefs,
# glusterfs, ceph-fuse...): most serve remote data, and for a local one the cost is only the slower journal.
# "fuseblk" is a local disk (ntfs-3g, exfat) driven through FUSE.
NETWORK_TYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "lustre",
        "cifs",
        "smb3",
        "smbfs",
        "gpfs",
        "beegfs",
        "ceph",
        "glusterfs",
        "9p",
        "virtiofs",
        "afs",
        "panfs",
        "pvfs2",
        "orangefs",
        "ocfs2",
        "gfs2",
        "wekafs",
        "quobyte",
        "ncpfs",
        "coda",
        "davfs",
        "vboxsf",
    }
)
# Mount options under which a file lock is taken on this host only, so another host's writer does not see it:
# NFS mounted "nolock" or "local_lock=posix|all", Lustre "localflock". One host writing is then still safe.
LOCAL_LOCK_OPTIONS = frozenset({"nolock", "local_lock=posix", "local_lock=all", "localflock"})

log = logging.getLogger("jupyter_dist")
_told: set[str] = set()


@dataclass(frozen=True)
class Mount:
    """One line of mountinfo: where it is mounted, its type, what it mounts, its options (per mount and super)."""

    point: str
    fstype: str
    source: str
    options: frozenset[str]

    @property
    def network(self) -> bool:
        return self.fstype in NETWORK_TYPES or self.fstype == "fuse" or self.fstype.startswith("fuse.")

    @property
    def local_locks(self) -> bool:
        """Whether file locks are kept on this host only (see LOCAL_LOCK_OPTIONS)."""
        return bool(self.options & LOCAL_LOCK_OPTIONS)


def _unescaped(field: str) -> str:
    # The kernel writes space, tab, newline and backslash in paths as octal escapes (\040 \011 \012 \134).
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of a mountinfo text (proc(5)): ``ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE
    SOURCE SUPER_OPTIONS``, in mount order. Lines that do not parse are skipped."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        dash = fields.index("-", 6)
        if len(fields) < dash + 3:
            continue
        options = fields[5].split(",") + (fields[dash + 3].split(",") if len(fields) > dash + 3 else [])
        mounts.append(
            Mount(
                point=_unescaped(fields[4]),
                fstype=fields[dash + 1],
                source=_unescaped(fields[dash + 2]),
                options=frozenset(options),
            )
        )
    return mounts


def mount_of(path: str | os.PathLike, mountinfo: str | None = None) -> Mount | None:
    """The mount that holds ``path`` (which need not exist yet; symbolic links are resolved), from ``mountinfo``
    (its text; None: this process's, on Linux). None where that cannot be told (not Linux, no /proc)."""
    if mountinfo is None:
        try:
            with open(MOUNTINFO, encoding="utf-8", errors="surrogateescape") as f:
                mountinfo = f.read()
        except OSError:
            return None
    target = os.path.realpath(path)
    best: Mount | None = None
    for mount in parse_mountinfo(mountinfo):
        point = mount.point.rstrip("/") or "/"
        inside = point == "/" or target == point or target.startswith(point + "/")
        # Equal length: the same point, and the later mount hides the earlier one.
        if inside and (best is None or len(point) >= len(best.point.rstrip("/") or "/")):
            best = mount
    return best


def journal_mode(path: str | os.PathLike, setting: str | None = None) -> tuple[str, Mount | None]:
    """The journal mode for a store at ``path`` ("wal" or "delete") and the mount it lies on. ``setting``
    (None: dask config ``jupyter_dist.store-journal``): "auto" picks "delete" on a network filesystem, else
    "wal"; "wal" and "delete" are taken as they are."""
    if setting is None:
        import dask

        setting = dask.config.get("jupyter_dist.store-journal", "auto")
    chosen = str(setting).strip().lower()
    if chosen not in JOURNAL_MODES:
        raise ArgumentError(
            f"dask config jupyter_dist.store-journal={setting!r}: one of auto (rollback journal on a network "
            "filesystem, WAL elsewhere), wal or delete"
        )
    mount = mount_of(path)
    if chosen == "auto":
        chosen = "delete" if mount is not None and mount.network else "wal"
    if mount is not None and mount.network:
        _tell_once(str(path), chosen, mount)
    return chosen, mount


def _tell_once(path: str, mode: str, mount: Mount) -> None:
    """Say once per process and store that the store is on a network filesystem, and what that means."""
    if mode == "wal":
        say_once(
            logging.WARNING,
            "jupyter_dist: the experiment store %s is on a network filesystem (%s at %s) but kept in WAL mode, as "
            "dask config jupyter_dist.store-journal says: only processes on this one host may use it",
            path,
            mount.fstype,
            mount.point,
        )
        return
    locks = ""
    if mount.local_locks:
        kept = ",".join(sorted(mount.options & LOCAL_LOCK_OPTIONS))
        locks = (
            f"; its file locks are this host's only (mounted {kept}): runs on other hosts must not write it"
        )
    say_once(
        logging.INFO,
        "jupyter_dist: the experiment store %s is on a network filesystem (%s at %s): kept in SQLite's rollback "
        "journal mode (DELETE), not WAL%s",
        path,
        mount.fstype,
        mount.point,
        locks,
    )


def say_once(level: int, message: str, *args: object) -> None:
    """Log ``message`` the first time only: the store is opened for every read (each REST request)."""
    key = message % args
    if key not in _told:
        _told.add(key)
        log.log(level, message, *args)


__all__ = [
    "JOURNAL_MODES",
    "NETWORK_TYPES",
    "Mount",
    "journal_mode",
    "mount_of",
    "parse_mountinfo",
    "say_once",
]
