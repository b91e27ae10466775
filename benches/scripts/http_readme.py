#!/usr/bin/env python3
"""Runs the HTTP load comparison and writes its figures into README.md.

    python3 benches/scripts/http_readme.py [--rounds N]   # run http_load.sh, update README.md
    python3 benches/scripts/http_readme.py --no-run       # re-read benches/results/http_load.txt

The raw output is kept in benches/results/http_load.txt; the README block between
`<!-- http-figures:begin -->` and `<!-- http-figures:end -->` is replaced, nothing else.
"""
import datetime
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RAW = os.path.join(ROOT, "benches", "results", "http_load.txt")


def fields(line):
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


def main():
    rounds = "5"
    if "--rounds" in sys.argv:
        rounds = sys.argv[sys.argv.index("--rounds") + 1]
    if "--no-run" not in sys.argv:
        out = subprocess.run(
            ["bash", os.path.join(ROOT, "benches", "scripts", "http_load.sh"), "--rounds", rounds],
            cwd=ROOT, check=True, capture_output=True, text=True,
        ).stdout
        os.makedirs(os.path.dirname(RAW), exist_ok=True)
        with open(RAW, "w") as f:
            f.write(out)
    with open(RAW) as f:
        text = f.read()
    medians = text.split("# medians over", 1)[1]
    header = [l[2:] for l in text.splitlines() if l.startswith("# ") and "CPUs" in l][:1]
    setup = [l[2:] for l in text.splitlines() if l.startswith("# wrk")][:1]
    rows = {}
    for line in medians.splitlines():
        if line.startswith("workload=http_hello"):
            f = fields(line)
            rows[f["runtime"]] = f
    ratio_line = next(l for l in medians.splitlines() if l.startswith("ratio "))
    t, k = rows["tickless"], rows["tokio"]

    def r(m):
        return float(t[m]) / float(k[m])

    lines = [
        "<!-- http-figures:begin -->",
        f"Measured {datetime.date.today().isoformat()} on {' '.join(header)}, by "
        f"`python3 benches/scripts/http_readme.py --rounds {rounds}` (medians over the rounds of "
        f"{' '.join(setup)}; raw output in `benches/results/http_load.txt`; wrk shares the CPUs "
        "with the server):",
        "",
        "| runtime | requests/s | p50 µs | p90 µs | p99 µs | server CPU µs per request |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, f in (("tickless (`hello_http`)", t), ("tokio multi-thread (`hello_http_tokio`)", k)):
        lines.append(
            f"| {name} | {float(f['rps']):,.0f} | {f['p50_us']} | {f['p90_us']} | {f['p99_us']} "
            f"| {f['cpu_us_per_req']} |"
        )
    lines.append(
        f"| tickless / tokio | {r('rps'):.2f}x | {r('p50_us'):.2f}x | {r('p90_us'):.2f}x "
        f"| {r('p99_us'):.2f}x | {r('cpu_us_per_req'):.2f}x |"
    )
    lines += ["", "Targets: `" + ratio_line.split(" ", 2)[2] + "`", "<!-- http-figures:end -->"]
    readme = os.path.join(ROOT, "README.md")
    with open(readme) as f:
        content = f.read()
    new, n = re.subn(
        r"<!-- http-figures:begin -->.*?<!-- http-figures:end -->", "\n".join(lines), content, flags=re.S
    )
    if n != 1:
        sys.exit("README.md has no <!-- http-figures:begin --> ... <!-- http-figures:end --> block")
    with open(readme, "w") as f:
        f.write(new)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
