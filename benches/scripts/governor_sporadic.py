#!/usr/bin/env python3
"""The idle governor on sporadic cross-core messages: one round trip every 1 ms and every 10 ms
between two cores, threads pinned and not, with the governor on (the default), off, and a fixed
50 µs spin; the medians of a few runs of the `pingpong` example, and benches/README.md's block
between `<!-- governor-sporadic:begin -->` and `<!-- governor-sporadic:end -->`.

    python3 benches/scripts/governor_sporadic.py [--runs N] [--no-readme]

Each run: `pingpong --cross-core --every <µs> --messages <n>` (n: 2,000 at 1 ms, 300 at 10 ms),
which prints the round trips' latency percentiles and the process's CPU time per round trip
(every thread's, from /proc/self/task/*/schedstat). The settings run in turn within each round,
so that a slow minute of the machine hurts them alike. About two minutes with 3 runs.
"""
import datetime
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from readme_block import ROOT, cpu_model, fields, replace_block  # noqa: E402

MODES = [("off", ["--no-governor"]), ("governor", []), ("spin 50 µs", ["--spin", "50"])]
CASES = [(1000, 2000), (10000, 300)]


def main():
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "tickless", "--example", "pingpong"],
        cwd=ROOT,
        check=True,
    )
    exe = os.path.join(ROOT, "target", "release", "examples", "pingpong")
    results = {}
    for every, n in CASES:
        for pin in (False, True):
            for _ in range(runs):
                for mode, flags in MODES:
                    args = [exe, "--cross-core", "--every", str(every), "--messages", str(n)]
                    args += flags + (["--pin"] if pin else [])
                    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
                    line = next(l for l in out.splitlines() if l.startswith("every_us="))
                    f = fields(line)
                    results.setdefault((every, pin, mode), []).append(
                        (float(f["rtt_p50_us"]), float(f["rtt_p99_us"]), float(f["cpu_us_per_rtt"]))
                    )
    rows = []
    for every, _ in CASES:
        for pin in (False, True):
            off = statistics.median(r[2] for r in results[(every, pin, "off")])
            for mode, _ in MODES:
                rs = results[(every, pin, mode)]
                p50 = statistics.median(r[0] for r in rs)
                p99 = statistics.median(r[1] for r in rs)
                cpu = statistics.median(r[2] for r in rs)
                rows.append(
                    f"| {every // 1000} ms | {'yes' if pin else 'no'} | {mode} | {p50:.1f} | "
                    f"{p99:.1f} | {cpu:.1f} | {cpu / off:.2f}x |"
                )
    lines = [
        "<!-- governor-sporadic:begin -->",
        f"Measured {datetime.date.today()} on 2 CPUs ({cpu_model()}) by "
        f"`python3 benches/scripts/governor_sporadic.py --runs {runs}` (medians of {runs} runs of "
        "`pingpong --cross-core --every <µs>`: a round trip between two cores every 1 ms, 2,000 "
        "of them, or every 10 ms, 300; CPU is the whole process's, per round trip):",
        "",
        "| one round trip every | pinned | idle setting | latency p50 µs | latency p99 µs | "
        "CPU µs per round trip | CPU / governor off |",
        "|---|---|---|---:|---:|---:|---:|",
        *rows,
        "<!-- governor-sporadic:end -->",
    ]
    if "--no-readme" in sys.argv:
        print("\n".join(lines))
    else:
        replace_block("governor-sporadic", lines)


if __name__ == "__main__":
    main()
