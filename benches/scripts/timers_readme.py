#!/usr/bin/env python3
"""Runs the `timers` criterion bench (the wheel's own costs, and a timeout through the public
path) and writes its figures into benches/README.md.

    python3 benches/scripts/timers_readme.py            # run the bench, then update benches/README.md
    python3 benches/scripts/timers_readme.py --no-run   # only re-read target/criterion

The README block between `<!-- timers:begin -->` and `<!-- timers:end -->` is replaced; nothing
else is touched. Figures are criterion's medians, with its 95% interval.
"""
import datetime
import json
import os
import re
import subprocess
import sys

from readme_block import ROOT, cpu_model, replace_block

CRITERION = os.path.join(ROOT, "target", "criterion", "timers")
PENDING = ["0", "1000", "1000000"]


def median(bench, pending):
    path = os.path.join(CRITERION, bench, pending, "new", "estimates.json")
    with open(path) as f:
        m = json.load(f)["median"]
    ci = m["confidence_interval"]
    return f"{m['point_estimate']:.1f} ns ({ci['lower_bound']:.1f}-{ci['upper_bound']:.1f})"


def point(path):
    """Criterion's median of one benchmark, in ns."""
    with open(os.path.join(path, "new", "estimates.json")) as f:
        return json.load(f)["median"]["point_estimate"]


def main():
    if "--no-run" not in sys.argv:
        subprocess.run(
            ["cargo", "bench", "-p", "tickless-benches", "--bench", "timers"],
            cwd=ROOT,
            check=True,
        )
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    lines = [
        "<!-- timers:begin -->",
        f"Measured {datetime.date.today().isoformat()} on {os.cpu_count()} cores of {cpu_model()}, "
        f"{rustc}, by `python3 benches/scripts/timers_readme.py` (criterion medians, 95% interval):",
        "",
        "| pending timers | insert + cancel | insert + fire |",
        "|---:|---:|---:|",
    ]
    for p in PENDING:
        lines.append(f"| {int(p):,} | {median('insert_cancel', p)} | {median('insert_fire', p)} |")
    # The same timeout through the public path, in a task of a one-core runtime.
    ready, pending, plain = (
        point(os.path.join(ROOT, "target", "criterion", "public", b))
        for b in ("timeout_ready", "timeout_pending_once", "pending_once")
    )
    lines += [
        "",
        "The same never-firing timeout through the public path (`time::timeout(1 s, f)` awaited in "
        "a one-core runtime: clock read, registration, cancel on drop):",
        "",
        "| public path | per timeout |",
        "|---|---:|",
        f"| `f` ready at its first poll (a deadline taken, nothing registered) | {ready:.1f} ns |",
        f"| `f` pending once: registered and cancelled (less the same `f` without a timeout, "
        f"{plain:.1f} ns) | {pending - plain:.1f} ns |",
    ]
    lines.append("<!-- timers:end -->")
    replace_block("timers", lines)


if __name__ == "__main__":
    main()
