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
    # its joins are its own: polars has nothing to say of them (a machine's own warnings,
    # numba's of an old TBB or polars' of CPU features, may still appear)
    assert "Sortedness of columns cannot be checked" not in done.stderr, done.stderr
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
    print("|".join(w.filename for w in caught))
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
    """The cache's kind and path, ``cache_dir()``, the warnings, and the files they name."""
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
    kind, where, warned, _ = _run(kernels, env, str(fallback))
    assert kind.split()[0] == "LightLoadCache"  # (a FunctionCache: cache_load.light)
    assert where.startswith(str(fallback))  # the package's kernels went there too
    assert kind.split()[1].startswith(str(fallback))
    assert warned == ""
    assert any(p.suffix == ".nbi" for p in fallback.rglob("*"))


def test_without_any_writable_cache_the_kernels_compile_and_a_warning_says_so(tmp_path):
    kernels, env = _uncachable(tmp_path)
    blocked = tmp_path / "not-a-directory"
    kind, _, warned, where_warned = _run(kernels, env, str(blocked / "asofgpu-numba-cache"))
    assert kind.split()[0] == "NullCache"
    assert warned.count("numba cannot write its cache") == 1
    assert warned.startswith(
        "asofgpu: numba cannot write its cache beside the kernels or in the user's cache "
        f"directory, and {blocked / 'asofgpu-numba-cache'} cannot be made (Not a directory)"
    )
    assert "set NUMBA_CACHE_DIR to a writable directory" in warned
    assert where_warned == "<string>"  # the caller's line, not asofgpu's


def _others_can_write(path: Path) -> None:
    path.mkdir(parents=True)
    path.chmod(0o777)


def _another_users(path: Path) -> None:
    path.mkdir(parents=True, mode=0o700)
    os.chown(path, os.getuid() + 4242, -1)


@pytest.mark.parametrize(
    ("plant", "why"),
    [
        (
            _others_can_write,
            "can be written by other users (an earlier asofgpu may have made it so: remove it)",
        ),
        (lambda path: path.symlink_to(path.parent), "is not a directory (a link or a file)"),
        pytest.param(
            _another_users,
            "belongs to another user",
            marks=pytest.mark.skipif(
                not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root"
            ),
        ),
    ],
    ids=["others-can-write", "a-link", "another-users"],
)
def test_a_fallback_folder_another_user_could_plant_files_in_is_not_used(tmp_path, plant, why):
    """numba unpickles its cache's index files: a fallback folder in the shared temporary
    directory that another user made, can write in, or links elsewhere could run their code
    in this process. It is left alone (nothing written, nothing read), and the kernels
    compile without a cache, saying why once."""
    kernels, env = _uncachable(tmp_path)
    fallback = tmp_path / "tmp" / "asofgpu-numba-cache"
    fallback.parent.mkdir()
    plant(fallback)
    before = sorted(fallback.rglob("*")) if fallback.is_dir() else None
    kind, _, warned, _ = _run(kernels, env, str(fallback))
    assert kind.split()[0] == "NullCache"
    assert f"and {fallback} {why}: each process compiles the kernels again" in warned
    assert (sorted(fallback.rglob("*")) if fallback.is_dir() else None) == before


def test_an_unwritable_numba_cache_dir_is_named_in_the_warning(tmp_path):
    """NUMBA_CACHE_DIR set, but a path no folder can be made at: the warning names it, and
    the fallback in the temporary directory (which the setting overrides) is not offered."""
    kernels, env = _uncachable(tmp_path)
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "not-a-directory" / "cache")
    kind, _, warned, _ = _run(kernels, env, None)
    assert kind.split()[0] == "NullCache"
    assert warned.startswith(
        f"asofgpu: numba cannot write its cache in NUMBA_CACHE_DIR ({env['NUMBA_CACHE_DIR']}): "
        "each process compiles the kernels again"
    )


def test_warm_with_nowhere_to_cache_exits_1_before_compiling(tmp_path):
    """A copy of the package whose kernels' __pycache__ cannot be made, without a home, and
    whose fallback in the temporary directory others can write: numba can cache nowhere, so
    warming would compile for minutes into nothing. (``python -S`` with the environment's
    packages on PYTHONPATH: the editable install's finder would load the checkout.)"""
    import shutil
    import site

    copy = tmp_path / "site"
    shutil.copytree(ROOT / "asofgpu", copy / "asofgpu", symlinks=False)
    shutil.rmtree(copy / "asofgpu" / "kernels" / "__pycache__", ignore_errors=True)
    (copy / "asofgpu" / "kernels" / "__pycache__").write_text("not a directory")
    temporary = tmp_path / "tmp"
    (temporary / f"asofgpu-numba-cache-{os.getuid()}").mkdir(parents=True)
    (temporary / f"asofgpu-numba-cache-{os.getuid()}").chmod(0o777)
    _, env = _uncachable(tmp_path)
    env.update(
        PYTHONPATH=os.pathsep.join([str(copy), *site.getsitepackages()]), TMPDIR=str(temporary)
    )
    done = subprocess.run(
        [sys.executable, "-S", "-m", "asofgpu", "warm"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    fallback = temporary / f"asofgpu-numba-cache-{os.getuid()}"
    assert done.stderr == (
        "asofgpu warm: error: numba cannot write its cache beside the kernels or in the "
        f"user's cache directory, and {fallback} can be written by other users (an earlier "
        "asofgpu may have made it so: remove it): warming would compile into nothing. Set "
        "NUMBA_CACHE_DIR to a writable directory, and warm with it set, as the joins will run\n"
    )


def test_numba_disable_jit_is_refused_by_name_where_a_kernel_is_needed(tmp_path):
    """NUMBA_DISABLE_JIT=1 (set to step through one's own numba code) made asofgpu's kernels
    plain Python, which cannot call their intrinsics: a prepared join failed with numba's
    "<intrinsic prefetch> is not usable in pure-python"."""
    script = textwrap.dedent("""
        import numpy as np, pyarrow as pa, asofgpu as ag
        right, left = np.arange(0, 400_000, 2), np.arange(1, 400_000, 3)
        right_by = pa.array((np.arange(len(right)) % 7).astype(str))
        left_by = pa.array((np.arange(len(left)) % 7).astype(str))
        try:
            ag.AsofJoin(right, right_by, device="cpu").join(left, left_by)
        except RuntimeError as exc:
            print(exc)
    """)
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    said = (
        "asofgpu's CPU kernels need numba's compiler, and NUMBA_DISABLE_JIT is set: unset it "
        "for the process that runs asofgpu (numba reads it once, at import)"
    )
    assert done.stdout == said + "\n"
    # The command says it in one line, as bad input (exit 2), without a traceback.
    argv = ["demo", "--quotes", "400000", "--trades", "100000", "--symbols", "10", "-q"]
    done = subprocess.run(
        [sys.executable, "-m", "asofgpu", *argv, "--device", "cpu", "--out-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 2
    assert done.stderr == f"asofgpu demo: error: {said}\n"


def test_an_older_numba_is_refused_by_name_where_a_kernel_is_needed(tmp_path):
    """numba 0.59 and 0.60 can run a kernel compiled for other argument types (pyproject.toml
    asks for 0.61; an environment made without pip's resolver may hold one): the command
    says so in one line, as bad input (exit 2), without a traceback."""
    script = textwrap.dedent("""
        import sys
        import numba
        numba.__version__ = "0.60.0"
        from asofgpu.__main__ import run
        sys.argv = ["asofgpu", *sys.argv[1:]]
        sys.exit(run())
    """)
    argv = ["demo", "--quotes", "400000", "--trades", "100000", "--symbols", "10", "-q"]
    done = subprocess.run(
        [sys.executable, "-c", script, *argv, "--device", "cpu", "--out-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "asofgpu demo: error: asofgpu needs numba 0.61 or later, found 0.60.0, which can run a "
        "kernel compiled for other argument types (wrong rows): pip install 'numba>=0.61'\n"
    )
