"""Advisory file locks (``fcntl.flock``) that the kernel drops when their process exits, crashes or is killed, so a
dead job never leaves a stale lock behind. Used for GPU leases (``gpu_pool``) and for run folders: one process at a
time measures into a folder (``run_folder_lock``)."""

from __future__ import annotations

import datetime
import errno
import fcntl
import logging
import os
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

log = logging.getLogger("specbench")


def holder_note() -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return f"pid {os.getpid()} on {socket.gethostname()} since {stamp}"


def try_lock(path: Path, note: str | None = None) -> int | None:
    """Take an exclusive lock on ``path`` (created if missing) without waiting: its file descriptor, or None when
    another open file holds it. ``note`` (default: pid, host, time) is written into the file for error messages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        os.close(fd)
        if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    _write_note(fd, note)
    return fd


def _write_note(fd: int, note: str | None) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, (note or holder_note()).encode() + b"\n", 0)


def unlock(fd: int) -> None:
    os.close(fd)  # closing the only descriptor of the open file releases its flock


def holder(path: Path) -> str:
    """What the holder of ``path`` wrote into it (best effort)."""
    try:
        return path.read_text().strip() or "unknown holder"
    except OSError:
        return "unknown holder"


@contextmanager
def run_folder_lock(folder: Path, wait: bool = True) -> Iterator[bool]:
    """Hold ``folder/.lock`` while measuring into the folder: yields True once held; with ``wait=False`` yields
    False at once if another process holds it. Two jobs of a sweep that share an AR baseline (same config hash)
    thereby never measure it at the same time: the second one resumes it afterwards and finds nothing left to do.
    On a filesystem without working locks the folder is used unlocked (with a warning)."""
    path = Path(folder) / ".lock"
    try:
        fd = try_lock(path)
        if fd is None and wait:
            log.info("waiting for %s to finish measuring into %s", holder(path), folder)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)  # blocks until the holder finishes or dies
            _write_note(fd, None)
    except OSError as err:  # e.g. ENOLCK on an NFS mount without lock support
        log.warning("cannot lock %s (%s): concurrent jobs sharing this folder are not serialised", path, err)
        fd = -1
    if fd is None:
        yield False
        return
    try:
        yield True
    finally:
        if fd >= 0:
            unlock(fd)
