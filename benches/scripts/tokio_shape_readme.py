#!/usr/bin/env python3
"""Measures a tokio-shaped server ported to tickless by a change of imports, and writes the
figures into README.md.

    python3 benches/scripts/tokio_shape_readme.py [--quick]   # run compare, then write
    python3 benches/scripts/tokio_shape_readme.py --no-run    # re-read the raw output

Runs `cargo run --release -p tickless-benches --bin compare -- --only server_tokio_shape
--no-syscalls` (the key-value server of `benches/src/workload/server/app.rs`, one listener and a
spawn per connection, on tickless and on tokio's multi-thread runtime with the same worker
count, and the same handler under `serve_per_core`), keeps the raw output in
benches/results/tokio_shape.txt, and replaces the README block between
`<!-- tokio-shape:begin -->` and `<!-- tokio-shape:end -->`, nothing else.
"""
import datetime
import os
import subprocess
import sys

from readme_block import ROOT, fields, replace_block

RAW = os.path.join(ROOT, "benches", "results", "tokio_shape.txt")
CMD = ["cargo", "run", "--release", "-q", "-p", "tickless-benches", "--bin", "compare", "--",
       "--only", "server_tokio_shape", "--no-syscalls"]
WAYS = [
    ("tickless", "the tokio shape on tickless (`tickless::spawn` per accepted connection)"),
    ("tokio", "the same code on tokio's multi-thread runtime"),
    ("tickless_per_core", "the same handler on tickless's own shape, `serve_per_core`"),
]


def kilo(x):
    return f"{x / 1000:.0f}k"


def whole(x):
    return f"{x:,.0f}"


def two(x):
    return f"{x:.2f}"


def main():
    quick = "--quick" in sys.argv
    if "--no-run" not in sys.argv:
        out = subprocess.run(CMD + (["--quick"] if quick else []), cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
        os.makedirs(os.path.dirname(RAW), exist_ok=True)
        with open(RAW, "w") as f:
            f.write(out)
    with open(RAW) as f:
        text = f.read()
    header = next((l for l in text.splitlines() if l.startswith("# compare:")), "# compare:")
    rows = {}
    for line in text.splitlines():
        if line.startswith("workload=server_tokio_shape "):
            r = fields(line)
            rows[r["runtime"]] = r
    missing = [w for w, _ in WAYS if w not in rows]
    if missing:
        sys.exit(f"no server_tokio_shape result for {missing} in {RAW}")
    base = rows["tickless"]
    runs = base.get("runs", "1")
    lines = [
        "<!-- tokio-shape:begin -->",
        f"Measured {datetime.date.today().isoformat()} by `python3 "
        f"benches/scripts/tokio_shape_readme.py{' --quick' if quick else ''}` (`compare --only "
        f"server_tokio_shape`: {header.removeprefix('# compare: ')}; raw output in "
        "`benches/results/tokio_shape.txt`). Each cell: the median of "
        f"{runs} runs, the range over the runs in brackets, then the ratio to the tokio shape "
        "on tickless. Server and client share this machine's 2 CPUs, and the runs spread widely:",
        "",
        "| server | requests/s | p99 µs | server CPU µs per request | connections per core |",
        "|---|---:|---:|---:|---:|",
    ]
    for way, label in WAYS:
        r = rows[way]

        def cell(key, fmt, r=r, way=way):
            v = float(r[key])
            text = fmt(v)
            if f"{key}_min" in r:
                text += f" ({fmt(float(r[key + '_min']))} to {fmt(float(r[key + '_max']))})"
            if way != "tickless":
                text += f", {v / float(base[key]):.2f}x"
            return text

        conns = [r[k] for k in sorted(r) if k.startswith("conns_core") and "_" not in
                 k.removeprefix("conns_core")]
        per_core = " / ".join(f"{float(c):.0f}" for c in conns) if conns else "(tasks move)"
        lines.append(f"| {label} | {cell('rps', kilo)} | {cell('p99_us', whole)} | "
                     f"{cell('cpu_us_per_req', two)} | {per_core} |")
    # The verdicts compare's Targets table gives for this workload, as it printed them.
    targets = [l for l in text.splitlines() if l.startswith("| server_tokio_shape")
               and "verdict" not in l and l.count("|") == 5]
    if targets:
        lines += ["", "| target (issue 23) | measured (medians) | worst to best run | verdict |",
                  "|---|---:|---:|---|"] + targets
    lines.append("<!-- tokio-shape:end -->")
    replace_block("tokio-shape", lines)


if __name__ == "__main__":
    main()
