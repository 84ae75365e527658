"""What a killed run leaves behind, and its removal by a later run.

A run removes its hidden files (the partial OUT, an old OUT moved aside, the spill folder) on
every way out but one: SIGKILL (``kill -9``, the kernel's OOM killer), after which spill
folders as large as the inputs stayed for good. Each such name carries the run's host and
process id (``tag``); a later run on the same host removes those of processes that are gone
(``remove_stale``), and only this user's: a run still going, another machine's on a shared
disk, or another user's are left alone.

>>> import re
>>> bool(re.fullmatch(r"[A-Za-z0-9]+-\\d+", tag()))
True
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket

_STALE = re.compile(
    r"^\..+\.(?P<host>[A-Za-z0-9]+)-(?P<pid>\d+)\.[^.]+\.asofgpu-(partial|old)$"  # OUT's
    r"|^\.asofgpu-spill-(?P<spill_host>[A-Za-z0-9]+)-(?P<spill_pid>\d+)-"  # spill folders
)


def _host() -> str:
    """This host in a name: its letters and digits, and a digest of the whole, so that two
    hosts whose names differ only in other characters (``node-1-1`` and ``node-11``) or past
    the first 24 differ here too: a run took another machine's live files on a shared disk
    for those of its own dead processes, and removed them.

    >>> re.fullmatch(r"[A-Za-z0-9]{1,24}[0-9a-f]{8}", _host()) is not None
    True
    """
    name = socket.gethostname()
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return (re.sub(r"[^A-Za-z0-9]", "", name)[:24] or "host") + digest


def run_of(name: str) -> str | None:
    """The tag (``tag()``) of the run whose hidden file or folder ``name`` is (a partial OUT,
    an old one moved aside, a spill folder); None for any other name.

    >>> run_of(".out.parquet.vm-12.k2j4x9_a.asofgpu-partial"), run_of("out.parquet")
    ('vm-12', None)
    """
    found = _STALE.match(name)
    if found is None:
        return None
    return f"{found['host'] or found['spill_host']}-{found['pid'] or found['spill_pid']}"


def tag() -> str:
    """This run's mark in the names of the hidden files it writes: host and process id."""
    return f"{_host()}-{os.getpid()}"


def hidden_prefix(name: str, suffix: str) -> str:
    """The start of the name of a hidden file beside OUT ``name`` that ends in ``suffix``:
    ``.NAME.TAG.``, to which ``tempfile`` adds 8 characters and ``suffix``. ``NAME`` is cut,
    by whole characters, to keep the whole within 255 bytes as the file system holds them
    (``os.fsencode``: a name that is not UTF-8 too), the usual most a name may hold: a long
    OUT name that the file system takes was refused for its hidden copy's ("File name too
    long").

    >>> len(os.fsencode(hidden_prefix("é" * 200, ".asofgpu-partial"))) + 8 + 16 <= 255
    True
    """
    short, room = name, 255 - 8 - len(os.fsencode(f"..{tag()}.{suffix}"))
    while len(os.fsencode(short)) > room and len(short) > 1:
        short = short[:-1]
    return f".{short}.{tag()}."


def remove_stale(folder: str) -> None:
    """Remove the hidden files in ``folder`` of runs on this host whose process is gone."""
    if os.name != "posix":  # no way to ask whether a process lives without touching it
        return
    try:
        names = os.listdir(folder)
    except OSError:
        return  # the caller's own write there says what is wrong
    here = _host()
    for name in names:
        found = _STALE.match(name)
        if found is None:
            continue
        host = found["host"] or found["spill_host"]
        pid = int(found["pid"] or found["spill_pid"])
        path = os.path.join(folder, name)
        try:
            if host != here or _alive(pid) or os.lstat(path).st_uid != os.getuid():
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)
        except OSError:
            continue  # gone already (another run cleaning up), or not ours to remove


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: another user's process, alive
        return True
    return True
