"""gpu-check's enrich stage: the product's main job as a user runs it on a GPU machine. One
market-data day (``marketdata.day``: 10M quotes x 10M trades, 1,000 symbols) written as parquet,
then ``asofgpu enrich`` as whole processes, parquet in and out, with ``--device cuda`` and
``--device cpu`` taking turns on the same files: the first run of each with the caches the
earlier stages left (numba's CPU cache, the GPU's kernel cache), the later ones warm. The
outputs must hold the same rows (``enrich_e2e.mismatch``) and carry enrich's footer mark.
Where pylibcudf is missing (the lent H200), ``--device cuda`` reads and writes on the host
and joins on the GPU; the run's log line says which."""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from gpu_check_stage import Recorder, StageContext

DEVICES = ("cuda", "cpu")
ENRICH = [sys.executable, "-m", "asofgpu"]  # the command, in this stage's Python


def stage_enrich(ctx: StageContext, rec: Recorder) -> None:
    import pyarrow.parquet as pq
    from enrich_e2e import KEY, SYMBOLS, day_files, enrich_argv, measure, mismatch

    sizes = ctx.sizes
    folder = Path(tempfile.mkdtemp(prefix="asofgpu-gpu-check-enrich-"))
    try:
        quotes, trades = day_files(folder, sizes.enrich_quotes, sizes.enrich_trades, print)
        rec["rows"] = {
            "quotes": sizes.enrich_quotes,
            "trades": sizes.enrich_trades,
            "symbols": SYMBOLS,
        }
        outs = {d: folder / f"enriched-{d}.parquet" for d in DEVICES}
        runs = {d: [] for d in DEVICES}
        for round_ in range(sizes.enrich_rounds):
            for device in DEVICES:
                outs[device].unlink(missing_ok=True)
                timeout = max(10.0, ctx.time_left() - 5)
                argv = enrich_argv(ENRICH, trades, quotes, outs[device], device)
                run = measure(argv, timeout)
                if run["status"] != "ok":
                    rec[f"{device}_failed"] = {k: run.get(k) for k in ("status", "rc", "stderr")}
                    raise RuntimeError(f"enrich --device {device} {run['status']}: {run['stderr']}")
                runs[device].append(run)
                rec["runs"] = {d: [r["wall_s"] for r in runs[d]] for d in DEVICES}
                print(f"round {round_ + 1}: --device {device} {run['wall_s']:.2f} s", flush=True)
            if round_ == 0:
                rec["cuda_log"] = runs["cuda"][0]["stderr"].strip().splitlines()[-16:]
                tables = {d: pq.read_table(outs[d], columns=KEY) for d in DEVICES}
                wrong = mismatch(tables["cpu"], tables["cuda"], "--device cpu", "--device cuda")
                rec["same_rows"] = wrong is None
                if wrong:
                    raise RuntimeError(f"WRONG ANSWER: {wrong}")
                _check_marked(outs, rec)
        rec["summary"] = {d: _summary(runs[d]) for d in DEVICES}
        rec["cpu_over_cuda"] = _ratio(rec["summary"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _check_marked(outs: dict[str, Path], rec: Recorder) -> None:
    """Each OUT carries enrich's footer mark, whichever writer wrote it (libcudf's on the
    device): without it a rerun into an OUT folder of such files would be refused."""
    from asofgpu.enrich._output import written_by_enrich

    unmarked = [d for d, out in outs.items() if not written_by_enrich(str(out))]
    rec["footer_marked"] = not unmarked
    if unmarked:
        raise RuntimeError(f"OUT of --device {', '.join(unmarked)} lacks enrich's footer mark")


def _summary(runs: list[dict]) -> dict:
    """The first run (what the caches held before), the median of the rest, the peak RSS."""
    later = [r["wall_s"] for r in runs[1:]]
    return {
        "first_s": runs[0]["wall_s"],
        "median_s": statistics.median(later) if later else None,
        "peak_rss_mib": max(r["peak_rss_bytes"] for r in runs) / 2**20,
    }


def _ratio(summary: dict) -> float | None:
    cuda, cpu = summary["cuda"]["median_s"], summary["cpu"]["median_s"]
    return None if not cuda or cpu is None else cpu / cuda
