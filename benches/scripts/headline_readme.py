#!/usr/bin/env python3
"""Writes the three headline figures of README.md from the runs the other scripts keep.

    python3 benches/scripts/headline_readme.py

Reads benches/results/compare.txt (written by compare_readme.py: same-core ping-pong and
timer_churn, tickless against tokio) and the timeout-cost block of benches/README.md (written by
timeout_cost.py: instructions per never-firing timeout), and replaces README.md's block between
`<!-- headline:begin -->` and `<!-- headline:end -->`. It measures nothing itself: rerun those
two scripts first for new figures.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from readme_block import ROOT, fields, replace_block  # noqa: E402

COMPARE = os.path.join(ROOT, "benches", "results", "compare.txt")
BENCHES = os.path.join(ROOT, "benches", "README.md")


def compare_results():
    """(workload, runtime) -> fields, from compare's result lines."""
    out = {}
    with open(COMPARE) as f:
        for line in f:
            if line.startswith("workload="):
                kv = fields(line)
                out[(kv["workload"], kv["runtime"])] = kv
    return out


def timeout_cost():
    """(tickless, tokio) instructions per timeout, from the timeout-cost block's table."""
    with open(BENCHES) as f:
        text = f.read()
    block = re.search(r"<!-- timeout-cost:begin -->(.*?)<!-- timeout-cost:end -->", text, re.S)
    if not block:
        sys.exit("benches/README.md has no timeout-cost block: run benches/scripts/timeout_cost.py")
    rows = {}
    for line in block.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0] in ("tickless", "tokio"):
            rows[cells[0]] = int(cells[3].strip("*").replace(",", ""))
    return rows["tickless"], rows["tokio"]


def main():
    r = compare_results()
    same = float(r[("pingpong_same", "tickless")]["rtt_per_s"]) / float(
        r[("pingpong_same", "tokio")]["rtt_per_s"]
    )
    churn_t, churn_k = r[("timer_churn", "tickless")], r[("timer_churn", "tokio")]
    late = float(churn_k["late_p50_us"]) / float(churn_t["late_p50_us"])
    cpu = float(churn_t["cpu_us_per_fire"]) / float(churn_k["cpu_us_per_fire"])
    ours, theirs = timeout_cost()
    lines = [
        "<!-- headline:begin -->",
        f"- **{same:.2f}x tokio's round trips** on one core (a 4-byte ping-pong over two pipes,"
        " [`compare`](benches/README.md#the-main-job-compare)).",
        f"- **Timers {late:.1f}x as punctual as tokio's** at {cpu:.2f}x its CPU per fire"
        " (1,000 tasks on 1-100 ms sleeps, median lateness;"
        " [`timer_churn`](benches/README.md#the-main-job-compare)).",
        f"- **{ours} instructions a request timeout that never fires** (tokio {theirs};"
        " [timer figures](benches/README.md#timer-figures)).",
        "",
        "(Written by `python3 benches/scripts/headline_readme.py` from the runs in"
        " [benches/README.md](benches/README.md), on 2 CPUs of a shared virtual machine.)",
        "<!-- headline:end -->",
    ]
    replace_block("headline", lines)


if __name__ == "__main__":
    main()
