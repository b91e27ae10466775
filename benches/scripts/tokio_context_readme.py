#!/usr/bin/env python3
"""Measures what the tokio context costs and writes the figures into benches/README.md.

    python3 benches/scripts/tokio_context_readme.py [--runs N]   # run the example N times (3)
    python3 benches/scripts/tokio_context_readme.py --no-run     # re-read the raw output

Runs `cargo run --release -p tickless --features tokio-compat,tokio-io --example
tokio_context_cost` N times (a TCP echo client on a tickless core against the same blocking
peer: tickless's streams, tokio's streams through the tokio context, plain tokio), keeps the raw
output in benches/results/tokio_context.txt, and replaces the README block between
`<!-- tokio-context:begin -->` and `<!-- tokio-context:end -->`, nothing else.
"""
import datetime
import os
import statistics
import subprocess
import sys

from readme_block import ROOT, fields, replace_block

RAW = os.path.join(ROOT, "benches", "results", "tokio_context.txt")
CMD = ["cargo", "run", "--release", "-q", "-p", "tickless", "--features",
       "tokio-compat,tokio-io", "--example", "tokio_context_cost"]
WAYS = [
    ("tickless_streams", "tickless's own streams on the core"),
    ("tokio_streams_in_tokio_context", "tokio's streams through the tokio context"),
    ("plain_tokio_current_thread", "plain tokio, current-thread runtime (for scale)"),
]


def main():
    runs = 3
    if "--runs" in sys.argv:
        runs = int(sys.argv[sys.argv.index("--runs") + 1])
    if "--no-run" not in sys.argv:
        out = []
        for i in range(runs):
            print(f"# run {i + 1}/{runs}", file=sys.stderr)
            out.append(subprocess.run(CMD, cwd=ROOT, check=True, capture_output=True,
                                      text=True).stdout)
        os.makedirs(os.path.dirname(RAW), exist_ok=True)
        with open(RAW, "w") as f:
            f.write("".join(out))
    with open(RAW) as f:
        rows = [fields(l) for l in f if l.startswith("way=")]
    by_way = {w: [r for r in rows if r["way"] == w] for w, _ in WAYS}
    n = len(by_way["tickless_streams"])
    lines = [
        "<!-- tokio-context:begin -->",
        f"Measured {datetime.date.today().isoformat()} by `python3 "
        f"benches/scripts/tokio_context_readme.py --runs {n}` (medians of {n} runs of the "
        "`tokio_context_cost` example, 20,000 round trips of 64 bytes each; raw output in "
        "`benches/results/tokio_context.txt`; range of the ratio in brackets):",
        "",
        "| client on a tickless core | round trips/s, ratio to tickless's streams | remote wakes per round trip |",
        "|---|---:|---:|",
    ]
    for way, label in WAYS:
        rs = by_way[way]
        ratios = [float(r["ratio"]) for r in rs]
        wakes = [float(r["remote_wakes_per_rtt"]) for r in rs if "remote_wakes_per_rtt" in r]
        wake = f"{statistics.median(wakes):.2f}" if wakes else "(not a tickless core)"
        lines.append(f"| {label} | {statistics.median(ratios):.2f}x "
                     f"[{min(ratios):.2f}-{max(ratios):.2f}] | {wake} |")
    lines.append("<!-- tokio-context:end -->")
    replace_block("tokio-context", lines)


if __name__ == "__main__":
    main()
