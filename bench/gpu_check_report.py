"""The GPU check's report, gpu_check.md: the stages' statuses, then a section per stage
(machine, install, test suite, GPU and CPU maps, benchmark with its goals), from the report
that gpu_check.json holds."""

from __future__ import annotations


def _ms(value) -> str:
    if value is None:
        return "—"
    return f"{value / 1e3:.2f} s" if value >= 1000 else f"{value:.3g} ms"


def _x(value) -> str:
    return "—" if value is None else f"{value:.3g}x"


def _last_line(text) -> str:
    """An error's last line (a traceback's message), or what says there was none."""
    lines = str(text or "").strip().splitlines()
    return lines[-1] if lines else "(no output)"


def _get(d: dict, *keys):
    for key in keys:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def render_markdown(report: dict) -> str:
    meta, stages = report["meta"], report["stages"]
    env = stages.get("env", {})
    gpu_name = _get(env, "gpu", "name") or ("CUDA simulator" if meta["simulated"] else "?")
    lines = [f"# asofgpu GPU check: {meta['started']}, {gpu_name}", ""]
    if meta["simulated"]:
        lines += [
            "**Simulated** (numba's CUDA simulator, tiny sizes): the code paths ran; the "
            "times mean nothing.",
            "",
        ]
    lines += [
        f"Result: **{meta.get('result', 'running')}**; {meta.get('seconds', '…')} s of a "
        f"{meta['budget_s']} s budget. Raw numbers: gpu_check.json; output: gpu_check.log.",
        "",
        "| stage | status | seconds | note |",
        "|---|---|---|---|",
    ]
    for name, entry in stages.items():
        note = entry.get("note", "")
        if entry.get("error"):
            note = (note + " " + _last_line(entry["error"]))[:200]
        lines.append(f"| {name} | {entry['status']} | {entry.get('seconds', '—')} | {note} |")
    lines += _md_env(env) + _md_install(stages.get("install"))
    lines += _md_pytest(stages.get("pytest")) + _md_compare(stages.get("compare"))
    lines += _md_bench(stages.get("bench")) + _md_enrich(stages.get("enrich"))
    return "\n".join(lines) + "\n"


def _md_env(env: dict) -> list[str]:
    if not env:
        return []
    lines = ["", "## Machine", ""]
    gpu = env.get("gpu")
    if gpu:
        lines.append(
            f"- GPU: {gpu['name']} (compute capability {gpu['compute_capability']}), "
            f"{gpu['multiprocessors']} SMs, L2 {gpu['l2_cache_mb']:.0f} MB, "
            f"{gpu['memory_gib']:.0f} GiB; CUDA driver API {gpu['driver_api']}, "
            f"runtime {gpu['runtime_api']}"
        )
    if isinstance(env.get("nvidia_smi"), dict):
        smi = env["nvidia_smi"]
        lines.append("- nvidia-smi: " + ", ".join(f"{k} {v}" for k, v in smi.items()))
    elif env.get("nvidia_smi"):
        lines.append(f"- nvidia-smi: {env['nvidia_smi']}")
    if env.get("machine"):
        lines.append(f"- host: {env['machine']}; numba threads {env.get('numba_threads')}")
    if env.get("python"):
        lines.append(f"- python {env['python']}")
    packages = env.get("packages") or {}
    if packages:
        absent = ", ".join(k for k, v in packages.items() if not v) or "none"
        lines.append(
            "- packages: "
            + ", ".join(f"{k} {v}" for k, v in packages.items() if v)
            + f"; absent: {absent}"
        )
    return lines


def _md_install(entry: dict | None) -> list[str]:
    if not entry or entry["status"] == "skipped":
        return []
    lines = [
        "",
        "## Install",
        "",
        f"- {entry.get('action', '—')}; asofgpu imports from {entry.get('installed_at')}",
    ]
    for key in [k for k in entry if k.startswith("wheelhouse_pip ")] + ["pip"]:
        if key in entry:
            lines.append(f"- `{entry[key]['command']}`: exit {entry[key]['rc']}")
    return lines


def _md_pytest(entry: dict | None) -> list[str]:
    if not entry or "command" not in entry:
        return []
    lines = ["", "## Test suite", "", f"`{entry['command']}`", ""]
    junit = entry.get("junit")
    if junit:
        lines.append(
            f"{junit['passed']} passed, {junit['failures']} failed, {junit['errors']} "
            f"errors, {junit['skipped']} skipped in {junit['time_s']:.0f} s "
            f"(exit {entry['rc']}; JUnit: gpu_check_pytest.xml)"
        )
    else:
        lines.append(
            f"No JUnit report (exit {entry.get('rc')}, {entry['status']}): see "
            f"gpu_check.log for how far it got."
        )
    if entry.get("left_out"):
        lines += [
            "",
            "Not run: these modules import, at their top, a package missing here "
            "(they should skip with pytest.importorskip instead):",
        ]
        lines += [f"- {path}: {', '.join(names)}" for path, names in entry["left_out"].items()]
    failed = (junit or {}).get("failed_tests") or []
    if failed:
        lines += ["", "Failed:"]
        lines += [f"- {f['test']} ({f['outcome']}): {f['message']}" for f in failed[:40]]
        if len(failed) > 40:
            lines.append(f"- … and {len(failed) - 40} more (gpu_check_pytest.xml)")
    return lines


def _md_compare(entry: dict | None) -> list[str]:
    if not entry or not entry.get("cases"):
        return []
    data = entry.get("data", {})
    lines = [
        "",
        f"## GPU and CPU gather maps ({data.get('left_rows', 0):,} left x "
        f"{data.get('right_rows', 0):,} right rows, {data.get('groups', 0):,} groups, 1% "
        f"nulls in every column)",
        "",
        "| key | null groups | options | matched | mismatches | GPU join | CPU join |",
        "|---|---|---|---|---|---|---|",
    ]
    for case in entry["cases"]:
        options = ", ".join(f"{k}={v}" for k, v in case["options"].items())
        mismatch = str(case["mismatches"])
        if case.get("first_mismatch"):
            m = case["first_mismatch"]
            mismatch += f" (row {m['row']}: GPU {m['gpu']}, CPU {m['cpu']})"
        lines.append(
            f"| {case['key']} | {case['null_equality']} | {options} | "
            f"{case['matched']:,} | {mismatch} | {case['gpu_s']:.2f} s | "
            f"{case['cpu_s']:.2f} s |"
        )
    return lines


def _md_bench(entry: dict | None) -> list[str]:
    if not entry or "sizes" not in entry:
        return []
    s = entry["sizes"]
    lines = [
        "",
        f"## Benchmark: {s['bench_left']:,} trades x {s['bench_right']:,} quotes x "
        f"{s['bench_groups']:,} groups",
        "",
        "Generated on the device: int64 times, int32 group codes (Zipf activity), four "
        "float64 quote columns; the right side time-sorted. GPU times by CUDA events, "
        "median of several runs after a warm-up; CPU times by the wall clock, one run.",
    ]
    lines += _md_first_calls(entry.get("first_calls") or {})
    copy, floor = entry.get("copy"), entry.get("floor")
    if copy:
        lines.append(
            f"\nDevice copy bandwidth: **{copy['bytes_per_s'] / 1e9:,.0f} GB/s** (a "
            f"{copy['bytes'] / 2e9:.2f} GB device-to-device copy, bytes read + written"
            + (
                f"; datasheet peak {entry['peak_bytes_per_s'] / 1e12:.2f} TB/s)."
                if entry.get("peak_bytes_per_s")
                else ")."
            )
        )
    if floor:
        lines.append(
            f"Byte floor: gather map {floor['map_bytes'] / 1e9:.2f} "
            f"GB = {_ms(floor['map_ms'])} at the measured bandwidth"
            + (f" ({_ms(floor['map_ms_at_peak'])} at peak)" if "map_ms_at_peak" in floor else "")
            + f"; with four payload columns "
            f"{floor['payload_bytes'] / 1e9:.2f} GB = {_ms(floor['payload_ms'])}."
        )
    orders = ("time-sorted", "shuffled")
    g = {o: entry.get(f"gpu_{o}") or {} for o in orders}
    c = {o: entry.get(f"cpu_{o}") or {} for o in orders}

    def row(label, cells):
        return "| " + " | ".join([label, *("—" if c is None else c for c in cells)]) + " |"

    def values(side, *keys):  # one per left order, None where it is missing
        return [_get(side[o], *keys) for o in orders]

    def each(side, fmt, *keys):
        return [None if v is None else fmt(v) for v in values(side, *keys)]

    lines += [
        "",
        "| | time-sorted left | shuffled left |",
        "|---|---|---|",
        row(
            "GPU prepare (AsofJoin of the quotes)",
            [_ms(_get(entry, "gpu_prepare", "ms")), "(same)"],
        ),
        row("GPU join(): gather map, end to end", each(g, _ms, "join", "ms")),
        row("&nbsp; its left key read and checked", each(g, _ms, "left_key", "ms")),
        row("&nbsp; its left groups looked up", each(g, _ms, "left_groups", "ms")),
        row("GPU probe kernel alone: gather map", each(g, _ms, "probe", "ms")),
        row("&nbsp; ratio to its byte floor", each(g, _x, "probe_floor_ratio")),
        row("GPU gather of 4 float64 columns (cupy take)", each(g, _ms, "gather4", "ms")),
        row("GPU map + 4 columns (probe + gather)", each(g, _ms, "map_and_payload_ms")),
        row("&nbsp; ratio to its byte floor", each(g, _x, "map_and_payload_floor_ratio")),
        row(
            "asofgpu.gather of 4 columns (host, Arrow)",
            [_ms(_get(entry, "host_gather4", "ms")), "—"],
        ),
        row("CPU prepare", [_ms(_get(entry, "cpu_prepare", "ms")), "(same)"]),
        row("CPU join(): gather map", [_cpu_join(c[o]) for o in orders]),
        row("CPU probe alone", each(c, _ms, "probe_ms_full")),
        row("**speed-up, join()** (CPU / GPU)", each(c, _x, "speedup_join")),
        row("**speed-up, probe** (CPU / GPU)", each(c, _x, "speedup_probe")),
        row("GPU map equals CPU map", each(c, str, "map_equals_gpu")),
    ]
    lines += [
        "",
        "Goals (issue #5), time-sorted / shuffled left: the gather map within 3x of "
        "its byte floor: "
        + _goal(values(g, "probe_floor_ratio"), lambda r: r <= 3)
        + "; at least 50x faster than the CPU backend: join() "
        + _goal(values(c, "speedup_join"), lambda r: r >= 50)
        + ", probe "
        + _goal(values(c, "speedup_probe"), lambda r: r >= 50)
        + ".",
    ]
    for o in orders:
        error = g[o].get("probe_error") or c[o].get("probe_error")
        if error:
            lines.append(f"\n{o}: the probe alone could not be timed: " + _last_line(error))
    return lines + _md_window(entry)


def _md_first_calls(found: dict) -> list[str]:
    """A new process's first joins on the GPU, with an empty kernel cache, then again."""
    if not found:
        return []
    runs = []
    for run in ("cold", "cached"):
        r = found.get(run)
        if r is None:
            continue
        if "error" in r:
            runs.append(f"{run}: failed ({_last_line(r['error'])})")
        else:
            runs.append(
                f"{run} {r['first_joins_s']:.2f} s (import {r['import_s']:.2f} s; the same "
                f"join again {r['again_s'] * 1e3:.1f} ms)"
            )
    same = found.get("same_answers", "not measured")
    return [
        "",
        "A new process's first joins on the GPU (a backward join and a window join, 200K x "
        "100K rows; a few hundred simulated), two processes sharing a new kernel cache: "
        f"{'; '.join(runs)}; the same answers: {same}.",
    ]


def _md_enrich(entry: dict | None) -> list[str]:
    """``asofgpu enrich`` as whole processes, on the GPU and on the CPU."""
    if not entry or "runs" not in entry:
        return []
    rows = entry.get("rows", {})
    lines = [
        "",
        f"## `asofgpu enrich`, parquet in and out ({rows.get('quotes', 0):,} quotes x "
        f"{rows.get('trades', 0):,} trades, {rows.get('symbols', 0):,} symbols)",
        "",
        "Whole processes (start to exit), `--device cuda` and `--device cpu` taking turns on "
        "the same files; the first run of each with what the caches held before.",
        "",
        "| device | first run | median of the rest | runs (s) | peak RSS |",
        "|---|---|---|---|---|",
    ]
    for device, times in entry["runs"].items():
        summary = _get(entry, "summary", device) or {}
        median = summary.get("median_s")
        peak = summary.get("peak_rss_mib")
        lines.append(
            f"| {device} | {f'{times[0]:.2f} s' if times else '—'} | "
            f"{'—' if median is None else f'{median:.2f} s'} | "
            f"{', '.join(f'{t:.2f}' for t in times)} | "
            f"{'—' if peak is None else f'{peak:,.0f} MiB'} |"
        )
    lines += [
        "",
        f"The outputs hold the same rows: {entry.get('same_rows', 'not compared')}; each "
        f"carries enrich's footer mark: {entry.get('footer_marked', 'not checked')}; the cpu's "
        f"median over the GPU's: {_x(entry.get('cpu_over_cuda'))}.",
    ]
    if entry.get("cuda_log"):
        lines += ["", "`--device cuda`'s log, its first run:", "", "```", *entry["cuda_log"], "```"]
    return lines


def _md_window(entry: dict) -> list[str]:
    """The window join's lines: GPU and CPU times, and whether they agree."""
    g, c = entry.get("gpu_window"), entry.get("cpu_window") or {}
    if not g:
        return []
    if "error" in g:
        return ["", "Window join on the GPU failed: " + _last_line(g["error"])]
    cut = c.get("slice_rows")
    return [
        "",
        f"Window join (the {g['before_ns'] / 1e6:.3g} ms before each time-sorted trade; "
        f"{g.get('positions', 0):,} window positions; max, min, mean, count of one column): "
        f"GPU windows {_ms(_get(g, 'windows', 'ms'))}, reductions {_ms(_get(g, 'reduce', 'ms'))}; "
        f"CPU on the first {cut or 0:,} trades: windows {_ms(_get(c, 'windows', 'ms'))}, "
        f"reductions {_ms(_get(c, 'reduce', 'ms'))}; equal to the GPU's: "
        f"{c.get('equals_gpu', 'not measured')}{_window_differences(c)}.",
    ]


def _window_differences(c: dict) -> str:
    """Each part of the window join where the CPU's differs from the GPU's, with how often
    (and, for min and max, how many of those are ties; for the mean, its largest relative
    difference)."""
    parts = []
    for part, d in (c.get("differences") or {}).items():
        if part == "mean":
            parts.append(f"mean largest relative difference {d['max_rel']:.2g}")
        if d["counts"]:
            ties = f", {d['same_value']:,} of them ties" if "same_value" in d else ""
            parts.append(f"{part} differs in {d['counts']:,} windows{ties}")
    return f" ({'; '.join(parts)})" if parts else ""


def _goal(ratios: list, met) -> str:
    if any(r is None for r in ratios):
        return "not measured"
    verdict = "met" if all(met(r) for r in ratios) else "missed"
    return f"{' / '.join(f'{r:.3g}x' for r in ratios)} ({verdict})"


def _cpu_join(c: dict) -> str:
    if "join_ms_full" not in c:
        return "—"
    if c.get("full_run"):
        return _ms(c["join_ms_full"])
    return f"{_ms(c['join_ms_full'])} (scaled from {c['slice_rows']:,} rows)"
