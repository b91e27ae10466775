#!/usr/bin/env python3
"""Runs the axum + sqlx + PostgreSQL comparison and writes its figures into benches/README.md.

    python3 benches/scripts/pg_readme.py [--rounds N]   # run ecosystem/scripts/pg_load.sh --wakes
    python3 benches/scripts/pg_readme.py --no-run       # re-read the raw output

Raw output in benches/results/pg_load.txt; the README block between `<!-- pg-figures:begin -->`
and `<!-- pg-figures:end -->` is replaced, nothing else. The servers: tickless with the tokio
context and one sqlx pool for the process (`tickless_shared`), the same with one pool per core
(`tickless_per_core`), and tokio's multi-thread runtime (`tokio`); see pg_load.sh.
"""
import datetime
import os
import re
import subprocess
import sys

from readme_block import ROOT, fields, replace_block

RAW = os.path.join(ROOT, "benches", "results", "pg_load.txt")
SERVERS = [
    ("tickless_shared", "tickless, tokio context, one pool (`pg ... shared`)"),
    ("tickless_per_core", "tickless, tokio context, a pool per core (`pg ... per-core`)"),
    ("tokio", "tokio multi-thread (`pg_tokio`)"),
]


def main():
    rounds = "5"
    if "--rounds" in sys.argv:
        rounds = sys.argv[sys.argv.index("--rounds") + 1]
    if "--no-run" not in sys.argv:
        out = subprocess.run(
            ["bash", os.path.join(ROOT, "ecosystem", "scripts", "pg_load.sh"),
             "--rounds", rounds, "--wakes"],
            cwd=ROOT, check=True, capture_output=True, text=True,
        ).stdout
        os.makedirs(os.path.dirname(RAW), exist_ok=True)
        with open(RAW, "w") as f:
            f.write(out)
    with open(RAW) as f:
        text = f.read()
    rounds = re.search(r"^# medians over (\d+) rounds", text, re.M).group(1)
    medians, wakes = {}, {}
    after_medians = False
    for line in text.splitlines():
        if line.startswith("# medians"):
            after_medians = True
        f = fields(line)
        if after_medians and line.startswith("workload=pg_user") and "rps" in f:
            medians[f["runtime"]] = f
        if "cross_thread_wakes_per_req" in f:
            wakes[f["runtime"]] = f
    tokio = medians["tokio"]
    lines = [
        "<!-- pg-figures:begin -->",
        f"Measured {datetime.date.today().isoformat()} by `python3 benches/scripts/pg_readme.py "
        f"--rounds {rounds}` (`ecosystem/scripts/pg_load.sh --rounds {rounds} --wakes`: medians "
        f"of {rounds} rounds, the servers in turn; raw output in `benches/results/pg_load.txt`). "
        "One query by primary key a request (`GET /user/42`), wrk -t2 -c32, a pool of 16 "
        "connections, PostgreSQL on the same 2 CPUs:",
        "",
        "| server | requests/s (ratio to tokio) | p99 µs | server CPU µs per request (ratio) "
        "| remote wakes per request | wakeups between the server's threads per request |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, label in SERVERS:
        m = medians[name]
        rps, cpu = float(m["rps"]), float(m["cpu_us_per_req"])
        ratio_rps = rps / float(tokio["rps"])
        ratio_cpu = cpu / float(tokio["cpu_us_per_req"])
        remote = m.get("remote_wakes_per_req", "-")
        remote = "(no counter)" if remote == "-" else f"{float(remote):.3f}"
        cross = wakes.get(name, {}).get("cross_thread_wakes_per_req", "(not counted)")
        lines.append(
            f"| {label} | {rps:,.0f} ({ratio_rps:.2f}x) | {float(m['p99_us']):,.0f} | "
            f"{cpu:.1f} ({ratio_cpu:.2f}x) | {remote} | {cross} |"
        )
    lines.append("<!-- pg-figures:end -->")
    replace_block("pg-figures", lines)


if __name__ == "__main__":
    main()
