"""``asofgpu warm`` and where numba's cache lands: the usual joins' kernels compiled ahead of
the first join, and a cache that is written somewhere even when neither the package's
directory nor the user's cache directory can be (then in the temporary directory, or, when
even that cannot be written, nowhere, with a warning)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from asofgpu import _warm, cli

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # asofgpu warm as a process tree: a minute or two when kernels changed
def test_warm_runs_every_shape_and_says_where_the_cache_is():
    done = subprocess.run(
        [sys.executable, "-m", "asofgpu", "warm", "--processes", "2"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert sorted(line.split(":")[0] for line in lines[:-1]) == [
        f"compiled {shape}" for shape in sorted(_warm.SHAPES)
    ]
    assert lines[-1].startswith("the usual joins' kernels are in numba's cache (")
    cache = lines[-1].split("(", 1)[1].rsplit(")", 1)[0]
    assert any(name.endswith(".nbi") for name in os.listdir(cache))


def test_warm_names_a_bad_process_count(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["warm", "--processes", "0"])
    assert exit_.value.code == 2
    assert "argument --processes: expected a positive number, got 0" in capsys.readouterr().err


# A kernel module of its own, in a directory whose __pycache__ is a file (numba cannot cache
# beside it) and with the user's cache directory under a file too: _njit_cached's fallbacks.
_SCRIPT = textwrap.dedent("""
    import sys, warnings
    sys.path.insert(0, {kernels!r})
    from asofgpu import _backend
    from asofgpu._backend import jit
    if {fallback!r} is not None:
        jit.FALLBACK_CACHE = {fallback!r}
    import kernel_module
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        twice = jit.njit_cached(kernel_module.twice)
        jit.njit_cached(kernel_module.twice)  # a second kernel: no second warning
    assert twice(21) == 42
    print(twice._cache.__class__.__name__, getattr(twice._cache, "_cache_path", None))
    print(_backend.cache_dir())
    print("|".join(str(w.message) for w in caught))
""")


def _uncachable(tmp_path: Path) -> tuple[Path, dict]:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "kernel_module.py").write_text("def twice(x):\n    return 2 * x\n")
    (kernels / "__pycache__").write_text("a file where numba would put its cache")
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(
        XDG_CACHE_HOME=str(blocked / "cache"),
        HOME=str(blocked / "home"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    return kernels, env


def _run(kernels: Path, env: dict, fallback: str | None) -> list[str]:
    script = _SCRIPT.format(kernels=str(kernels), fallback=fallback)
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_cache_goes_to_the_temporary_directory_when_nowhere_else_is_writable(tmp_path):
    kernels, env = _uncachable(tmp_path)
    fallback = tmp_path / "tmp" / "asofgpu-numba-cache"
    kind, where, warned = _run(kernels, env, str(fallback))
    assert kind.split()[0] == "FunctionCache"
    assert where.startswith(str(fallback))  # the package's kernels went there too
    assert kind.split()[1].startswith(str(fallback))
    assert warned == ""
    assert any(p.suffix == ".nbi" for p in fallback.rglob("*"))


def test_without_any_writable_cache_the_kernels_compile_and_a_warning_says_so(tmp_path):
    kernels, env = _uncachable(tmp_path)
    blocked = tmp_path / "not-a-directory"
    kind, _, warned = _run(kernels, env, str(blocked / "asofgpu-numba-cache"))
    assert kind.split()[0] == "NullCache"
    assert warned.count("numba cannot write its cache") == 1
    assert (
        "numba cannot write its cache beside the kernels, in the user's cache directory" in warned
    )
    assert "set NUMBA_CACHE_DIR to a writable directory" in warned
