"""Ctrl-C, SIGTERM and SIGHUP around ``asofgpu enrich``'s commit (``enrich/_interrupts.py``): one
that comes during it waits until OUT is in place, and one a callback from C dropped stops it
with the old OUT kept. (The command's exit
codes and messages: tests/test_cli.py.)"""

from __future__ import annotations

import os
import signal
import sys

import pytest
from fakes import dropped_interrupt

from asofgpu.enrich import _interrupts as interrupts
from asofgpu.enrich._output import MARKER, AtomicFile, AtomicFolder

pytestmark = pytest.mark.usefixtures("heeding_interrupts")


def _old_folder(out):
    out.mkdir()
    (out / MARKER).write_text("written by asofgpu enrich\n")
    (out / "old.parquet").write_text("the previous result")


def _hidden(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _new_folder(out) -> AtomicFolder:
    target = AtomicFolder(str(out))
    with open(target.path_for("new.parquet"), "w") as f:
        f.write("the new result")
    return target


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_an_interrupt_during_the_renames_waits_until_out_is_in_place(tmp_path, signum):
    """The old folder is moved aside, the new one renamed in, the old one removed: a signal
    that arrives meanwhile is raised once all of it is done, not between two renames."""
    out = tmp_path / "out"
    _old_folder(out)
    expected = {signal.SIGTERM: interrupts.Terminated, signal.SIGHUP: interrupts.HungUp}.get(
        signum, KeyboardInterrupt
    )
    # (handling raises it again at its end: caught here, it ended nothing)
    with pytest.raises(expected), interrupts.handling() as run, _new_folder(out) as target:
        listed = target._check_unchanged()  # (as commit does first)

        def interrupted_midway():
            signal.raise_signal(signum)  # its handler would raise at the next line
            target._put_in_place(listed)

        with pytest.raises(expected) as raised:
            interrupts.committing(interrupted_midway)
        assert raised.type is expected  # (each is a KeyboardInterrupt)
        assert run.committed and target.committed
    assert os.listdir(out) == ["new.parquet"]  # (commit writes the marker before this)
    assert _hidden(tmp_path) == []


def test_an_interrupt_a_callback_dropped_stops_the_commit(tmp_path, capsys):
    out = tmp_path / "out.parquet"
    out.write_text("the previous result")
    with pytest.raises(KeyboardInterrupt), interrupts.handling() as run:
        dropped_interrupt()
        assert run.interrupted is KeyboardInterrupt
        with pytest.raises(KeyboardInterrupt), AtomicFile(str(out)) as target:
            with open(target.tmp, "w") as f:
                f.write("the new result")
            target.commit()
    assert out.read_text() == "the previous result"
    assert _hidden(tmp_path) == []
    assert capsys.readouterr().err == ""  # ctypes' "Exception ignored ..." kept off stderr


def test_handling_puts_back_what_it_replaced():
    hook = sys.unraisablehook
    before = {s: signal.getsignal(s) for s in interrupts.SIGNALS}  # (xdist ignores SIGINT)
    with pytest.raises(KeyboardInterrupt), interrupts.handling() as run:
        assert all(signal.getsignal(s) is not before[s] for s in interrupts.SIGNALS)
        dropped_interrupt()
    assert run.interrupted is KeyboardInterrupt
    assert {s: signal.getsignal(s) for s in interrupts.SIGNALS} == before
    assert sys.unraisablehook is hook
    interrupts.check()  # a later run in this process starts clean: nothing raised


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_an_import_turned_into_its_own_error_ends_the_run_as_one(signum):
    """pyarrow imports pandas mid-run (an Arrow array made from numpy): a Ctrl-C while
    pandas' C code initialises came out as ImportError ("PyCapsule_Import could not import
    module"), and the command printed its traceback; the run ends as interrupted instead.
    An error with no signal behind it is left as it is."""
    expected = interrupts.Terminated if signum == signal.SIGTERM else KeyboardInterrupt
    with pytest.raises(expected) as raised:
        with interrupts.handling():
            try:
                signal.raise_signal(signum)
            except KeyboardInterrupt as exc:
                raise ImportError('PyCapsule_Import could not import module "pandas"') from exc
    assert raised.type is expected
    assert isinstance(raised.value.__cause__, ImportError)
    with pytest.raises(ImportError, match="no signal"), interrupts.handling():
        raise ImportError("no signal")


def test_a_second_signal_lets_the_clean_up_of_the_first_finish(tmp_path):
    """Ctrl-C pressed twice: the second, raised inside the clean-up the first set off, cut
    a spill folder's removal short, and the folder stayed behind. It is noted, not raised."""
    spill = tmp_path / ".asofgpu-spill"
    spill.mkdir()
    with pytest.raises(KeyboardInterrupt), interrupts.handling() as run:
        try:
            signal.raise_signal(signal.SIGINT)
        finally:  # the clean-up, as a spill folder's __exit__ runs it
            signal.raise_signal(signal.SIGTERM)  # would raise here, half-way
            spill.rmdir()
    assert run.interrupted is KeyboardInterrupt  # the first decides the exit code
    assert not spill.exists()


def test_after_a_dropped_interrupt_the_next_signal_still_stops_the_run():
    """The first Ctrl-C dropped by a callback from C (numba compiling): the next one, which
    a run ending anyway lets be, is raised, and so is the first at the run's end if nothing
    raised it again (``asofgpu warm``, all compiling, never checks)."""
    with pytest.raises(interrupts.Terminated), interrupts.handling() as run:
        dropped_interrupt()
        assert run.interrupted is KeyboardInterrupt
        signal.raise_signal(signal.SIGTERM)
        raise AssertionError("the second signal was let be")
    with pytest.raises(KeyboardInterrupt), interrupts.handling():
        dropped_interrupt()  # and nothing after it: the run ends as interrupted
