"""One writer at a time for a run folder or a sweep's results.

The lock is an OS file lock (`filelock`, flock on Unix): the kernel drops it when the holding
process ends in any way, kill -9 included, so a lock left by a killed run never blocks the next
start. Beside the lock file, `<lock>.json` names the holder (pid, host, command, start time) so
that a refused second writer can say who holds it. Readers never take the lock.
"""
from __future__ import annotations

import json
import os
import shlex
import socket
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from filelock import FileLock, Timeout


class BusyError(RuntimeError):
    """Another live process is writing this run or sweep; the message names it."""


def holder_path(lock_path: Path) -> Path:
    return Path(lock_path).with_name(Path(lock_path).name + ".json")


def this_command(limit: int = 160) -> str:
    """The command line of this process, on one line and short ('python -m assignadd_core train ...')."""
    argv = list(getattr(sys, "orig_argv", None) or sys.argv)
    if argv:
        argv[0] = Path(argv[0]).name
    if len(argv) > 2 and argv[1] == "-c":
        argv[2] = "…"  # the script itself
    text = " ".join(shlex.join(argv).split())
    half = (limit - 3) // 2  # head and tail: the tail usually holds the run's name
    return text if len(text) <= limit else f"{text[:half]} … {text[-half:]}"


def describe_holder(lock_path: Path) -> str:
    try:
        info = json.loads(holder_path(lock_path).read_text())
        return (f"pid {info['pid']} on {info['host']} ({info['command']}, since {info['since']})")
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (it has not named itself yet)"


def _write_holder(path: Path) -> None:
    info = {"pid": os.getpid(), "host": socket.gethostname(), "command": this_command(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S")}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(info) + "\n")
    os.replace(tmp, path)


@contextmanager
def exclusive(lock_path: Path, what: str) -> Iterator[None]:
    """Hold the lock at `lock_path` for the block, or raise BusyError at once naming `what` and its holder."""
    lock_path = Path(lock_path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(lock_path)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        raise BusyError(f"{what} is being written by {describe_holder(lock_path)};"
                        " wait for it to finish or stop that process") from None
    info = holder_path(lock_path)
    try:
        _write_holder(info)
        yield
    finally:
        info.unlink(missing_ok=True)  # before the release: the next holder writes its own
        lock.release()
