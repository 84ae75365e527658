"""bench/run.py's results: each cell's entry, the report (machine, versions, settings,
entries), and the files written from it into ``--out``: bench.json (the raw numbers), bench.md
(the table) and bench.png (rows/s against size), each whole or not at all."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from bench_plan import MODES
from common import ROOT, atomic_write, commit, heading, label, machine, seconds_text, versions
from peers import CHECKED, MAX_ROWS, TITLES


def entries(cells: list[dict], results: dict) -> list[dict]:
    """The report's cells in plan order, each with its job's record (or 'too large') and its
    rows per second."""
    found = []
    for cell in cells:
        ds, job = cell["dataset"], cell["planned"]
        record = results[job] if cell["job"] is not None else {"status": "too large"}
        rows = ds.quotes_rows + job.trades_rows if cell["mode"] == "one-shot" else job.trades_rows
        entry = {
            "quotes": ds.quotes_rows,
            "trades": ds.trades_rows,
            "order": ds.order,
            "mode": cell["mode"],
            "system": cell["system"],
            "trades_used": job.trades_rows,
            **record,
        }
        if record["status"] == "ok":
            entry["rows_per_s"] = rows / record["median_s"]
        found.append(entry)
    return found


def build(
    args,
    argv: list[str],
    *,
    date: str,
    load_start: float,
    began: float,
    not_installed: list[str],
    references: dict,
    results: list[dict],
) -> dict:
    """The whole report, as bench.json holds it."""
    return {
        "date": date,
        "machine": machine(),
        "commit": commit(),
        "versions": versions(
            ("asofgpu", "numpy", "pyarrow", "numba", "polars", "pandas", "duckdb", "chdb")
        ),
        "asofgpu_source": asofgpu_source(),
        "load_average": [load_start, os.getloadavg()[0]],
        "command": ["bench/run.py", *argv],
        "settings": {
            "sizes": [[q, t] for q, t in args.sizes],
            "systems": args.systems,
            "not_installed": not_installed,
            "orders": args.orders,
            "runs": args.runs,
            "probe_rows": args.probe_rows,
            "symbols": args.symbols,
            "seed": args.seed,
            "timeout_s": args.timeout,
            "mem_limit_gib": args.mem_limit,
        },
        "references": sorted({name for _, name in references.values()}),
        "elapsed_s": time.perf_counter() - began,
        "results": results,
    }


def write(report: dict, out: Path) -> str:
    """bench.json, bench.md and bench.png in ``out``; returns the table."""
    text = markdown(report)
    atomic_write(
        out / "bench.json", lambda tmp: tmp.write_text(json.dumps(report, indent=1) + "\n")
    )
    atomic_write(out / "bench.md", lambda tmp: tmp.write_text(text))
    plot(report, out / "bench.png")
    return text


def asofgpu_source() -> str | None:
    """Where the workers import asofgpu from (this checkout, unless PYTHONPATH says otherwise)."""
    import importlib.util

    spec = importlib.util.find_spec("asofgpu")
    return str(Path(spec.origin).parent) if spec and spec.origin else None


def memory_text(mib: float) -> str:
    """MiB as the table shows them."""
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


def cell_text(entry: dict, timeout: float, mem_limit: float) -> str:
    status = entry["status"]
    if status == "too large":
        return f"not run (> {label(MAX_ROWS[entry['system']])} rows)"
    if status == "timeout":
        return f"timeout (> {timeout:g} s)"
    if status == "memory":
        return f"stopped (> {mem_limit:g} GiB)"
    text = f"{seconds_text(entry['median_s'])} ({memory_text(entry['peak_rss_mib'])})"
    if entry.get("prepare_s") is not None:
        text += f", prepare {seconds_text(entry['prepare_s'])}"
    return text


def ratio(rows: list[dict]) -> float | None:
    """asofgpu's median over the fastest peer's, where both finished."""
    ours = [e["median_s"] for e in rows if e["system"] == "asofgpu" and e["status"] == "ok"]
    peers = [e["median_s"] for e in rows if e["system"] != "asofgpu" and e["status"] == "ok"]
    return ours[0] / min(peers) if ours and peers else None


def groups(entries: list[dict]):
    """Entries grouped by (quotes, trades, order, mode), in run order."""
    keyed: dict[tuple, list[dict]] = {}
    for e in entries:
        keyed.setdefault((e["quotes"], e["trades"], e["order"], e["mode"]), []).append(e)
    return keyed.items()


def markdown(report: dict) -> str:
    s = report["settings"]
    systems = s["systems"]
    head = heading(report)
    if report["asofgpu_source"] != str(ROOT / "asofgpu"):
        head[0] += f" · asofgpu imported from {report['asofgpu_source']}"
    lines = [
        "# asofgpu benchmark",
        "",
        *head,
        "",
        f"Each cell: the median of {s['runs']} timed run(s) after a warm-up, each system in "
        f"its own process (the systems on the same files taking turns, a run each per "
        f"round), and in parentheses that process's peak RSS during the runs "
        f"(its inputs included). Rows: `asofgpu.marketdata.day(QUOTES, TRADES, "
        f"{s['symbols']}, seed={s['seed']})`, {s['symbols']:,} string symbols of Zipf "
        f"activity, four float64 quote columns; the trades carry time, symbol, price, size "
        f"and trade_id. Backward, exact matches allowed, `by` symbol.",
        "",
        "| quotes × trades | order | mode | "
        + " | ".join(TITLES[x] for x in systems)
        + (" | asofgpu / fastest peer |" if "asofgpu" in systems and len(systems) > 1 else " |"),
        "|---|---|---|"
        + "---:|" * len(systems)
        + ("---:|" if "asofgpu" in systems and len(systems) > 1 else ""),
    ]
    for (quotes, trades, order, mode), rows in groups(report["results"]):
        by_system = {e["system"]: e for e in rows}
        cells = [cell_text(by_system[x], s["timeout_s"], s["mem_limit_gib"]) for x in systems]
        if mode == "prepared":
            mode = f"prepared, {label(by_system['asofgpu']['trades_used'])} probed"
        line = (
            f"| {label(quotes)} × {label(trades)} | {order} | {mode} | " + " | ".join(cells) + " |"
        )
        if "asofgpu" in systems and len(systems) > 1:
            r = ratio(rows)
            line += f" {r:.2f}x |" if r is not None else " – |"
        lines.append(line)
    lines += [
        "",
        "- **one-shot**: tables in, table out. asofgpu: `asofgpu.join_asof(trades, quotes, "
        "on='time', by='symbol', device='cpu')` on pyarrow tables as `pq.read_table` gives "
        "them (in chunks, not combined); polars: `join_asof(..., "
        "by='symbol', check_sortedness=False)` on DataFrames; pandas: `merge_asof(..., "
        "by='symbol')`; DuckDB: `CREATE TEMP TABLE joined AS SELECT t.*, q.bid, ... FROM "
        "trades t ASOF LEFT JOIN quotes q ON t.symbol = q.symbol AND t.time >= q.time` on "
        "tables in an in-memory database; ClickHouse (chdb, in process): the same query "
        "into a `Memory` table, with `SETTINGS join_use_nulls = 1` (unmatched trades get "
        "nulls, not zeros); pyarrow: `trades.join_asof(quotes, on='time', by='symbol', "
        "tolerance=-(2**63 - 1))` (Acero; a negative tolerance looks back) on tables as "
        f"read, only where neither side passes {label(MAX_ROWS['pyarrow'])} rows (it took "
        "13-20 s at 1M × 1M on 2 cores). Symbols are strings for all (encoding is timed). On "
        "shuffled input polars, pandas and pyarrow also sort both sides by time inside the timed "
        "region, as they require; on input sorted by symbol, then time (by-symbol), pandas and "
        "pyarrow do (polars' by-join needs only each symbol's times in order); asofgpu, DuckDB "
        "and ClickHouse take any order.",
        f"- **prepared**: asofgpu builds `AsofJoin` on the quotes once (its time is the "
        f"`prepare` figure, one run after a warm-up); each timed run probes "
        f"{s['probe_rows']:,} trades (all trades when there are fewer; otherwise a random "
        f"subset in file order) and gathers the four quote columns into a table. The peers' "
        f"cells are their one-shot joins of the same quotes with those same trades.",
        "- Each system uses the threads it takes by default (all cores; pandas' merge_asof "
        "is single-threaded).",
        f"- Correctness: each system's `{CHECKED}` column, trade by trade, equals "
        f"{' or '.join(report['references']) or 'nobody'}'s on the same files (the first "
        f"system that finished on them; checked once, on the warm-up run).",
        "- Goals (issue #5, 10M × 10M): one-shot at most 0.5x the fastest peer on time-sorted "
        "input and 0.33x on shuffled input; the prepared probe + gather of 1M trades at most "
        "0.1x the fastest peer's one-shot on those trades.",
        *(
            [f"- Not installed here, so left out: {', '.join(s['not_installed'])}."]
            if s.get("not_installed")
            else []
        ),
        "",
        "![rows/s against size](bench.png)",
        "",
    ]
    return "\n".join(lines)


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    s = report["settings"]
    modes = [m for m in MODES if any(e["mode"] == m for e in report["results"])]
    orders = s["orders"]
    fig, axes = plt.subplots(
        len(modes), len(orders), squeeze=False, figsize=(5.2 * len(orders), 4.0 * len(modes))
    )
    for r, mode in enumerate(modes):
        for c, order in enumerate(orders):
            ax = axes[r][c]
            ticks: dict[int, set[str]] = {}  # x -> the datasets there, as tick labels
            for system in s["systems"]:
                points = sorted(
                    (e["quotes"] + e["trades"], e["rows_per_s"])
                    for e in report["results"]
                    if (e["mode"], e["order"], e["system"]) == (mode, order, system)
                    and e["status"] == "ok"
                )
                if points:
                    ax.plot(*zip(*points), marker="o", label=TITLES[system])
            for e in report["results"]:
                if (e["mode"], e["order"]) == (mode, order):
                    ticks.setdefault(e["quotes"] + e["trades"], set()).add(
                        f"{label(e['quotes'])}×{label(e['trades'])}"
                    )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(sorted(ticks), ["\n".join(sorted(ticks[x])) for x in sorted(ticks)])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.margins(x=0.1)
            ax.grid(True, which="both", alpha=0.3)
            ax.set_title(f"{mode}, {order}")
            ax.set_xlabel("dataset: quotes × trades (placed at quotes + trades rows)")
            ax.set_ylabel(
                "trades probed per second"
                if mode == "prepared"
                else "input rows (quotes + trades) per second"
            )
            if ax.get_lines():  # a panel where every system timed out has nothing to label
                ax.legend(fontsize="small")
    m = report["machine"]
    fig.suptitle(
        f"asofgpu bench, {report['date']}, {m['cpu']}, {m['cores']} cores (median of {s['runs']})",
        fontsize="medium",
    )
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)
