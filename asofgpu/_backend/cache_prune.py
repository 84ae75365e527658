"""The cached kernels of earlier sources, removed from numba's cache directories.

``cached_njit`` names each kernel with a digest of the kernel sources (``_source_digest``),
so that an edit or an upgrade compiles anew; the files under an earlier digest are never
loaded again. They piled up: 20-25 MB a digest, so an installation upgraded in place gained
that much each time, and a checkout whose kernels were edited 20 times held 200 MB. The first
save into a cache directory in a process removes the files of every digest but its own and
the one written last before it, so that switching between two versions (two branches, or
back after an upgrade) still finds its kernels compiled.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> for n, digest in enumerate(["0123456789ab", "ba9876543210", "aaaaaaaaaaaa"]):
...     for end in ("nbi", "1.nbc"):
...         name = f"probe.walk_{digest}_int-12.py311.{end}"
...         open(os.path.join(folder, name), "w").close()
...         os.utime(os.path.join(folder, name), (n, n))
>>> prune(folder, "probe.walk_aaaaaaaaaaaa_int-12.py311.nbi")
>>> sorted(os.listdir(folder))  # doctest: +NORMALIZE_WHITESPACE
['probe.walk_aaaaaaaaaaaa_int-12.py311.1.nbc', 'probe.walk_aaaaaaaaaaaa_int-12.py311.nbi',
 'probe.walk_ba9876543210_int-12.py311.1.nbc', 'probe.walk_ba9876543210_int-12.py311.nbi']
"""

from __future__ import annotations

import contextlib
import os
import re

# A kernel's cache file: ``module.qualname_DIGEST[variant]-LINE.pyXY[.N|.other].nbi/.nbc``
# (numba's index and data files; numba-cuda's data files name the compute capability too).
CACHED_KERNEL = re.compile(r"^[A-Za-z_]\w*\.\w+?_([0-9a-f]{12})\w*-\d+\.py\d+(?:\.\w+)*\.nb[ic]$")

_PRUNED: set[str] = set()  # the directories this process pruned


def prune(directory: str, saved: str) -> None:
    """After the save of ``saved`` (an index file's name) into ``directory``, under its
    lock: once a process, remove the files of kernels cached under a digest other than
    ``saved``'s and the one last written before it. A name of no digest prunes nothing."""
    found = CACHED_KERNEL.match(saved)
    if found is None or directory in _PRUNED:
        return
    _PRUNED.add(directory)
    current = found.group(1)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    earlier: dict[str, list[str]] = {}
    for name in names:
        found = CACHED_KERNEL.match(name)
        if found is not None and found.group(1) != current:
            earlier.setdefault(found.group(1), []).append(name)
    if len(earlier) < 2:
        return
    written = {digest: _last_written(directory, files) for digest, files in earlier.items()}
    kept = max(written, key=written.get)
    for digest, files in earlier.items():
        if digest != kept:
            for name in files:
                with contextlib.suppress(OSError):  # (another process's prune took it)
                    os.remove(os.path.join(directory, name))


def _last_written(directory: str, names: list[str]) -> float:
    times = [0.0]
    for name in names:
        with contextlib.suppress(OSError):
            times.append(os.stat(os.path.join(directory, name)).st_mtime)
    return max(times)
