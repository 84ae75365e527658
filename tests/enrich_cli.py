"""Running ``asofgpu enrich`` in the test process, and what it must never leave behind."""

from __future__ import annotations

from pathlib import Path

from asofgpu import cli


def run(*argv, capsys) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the command."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def hidden(folder: Path) -> list[str]:
    """What a run may leave only while it runs: partial outputs, spill folders, old OUTs."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))
