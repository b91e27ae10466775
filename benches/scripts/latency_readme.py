#!/usr/bin/env python3
"""Measures open-loop latency against load (compare's `latency` workload) and writes the table
into benches/README.md.

    python3 benches/scripts/latency_readme.py [--quick]   # run compare, then write
    python3 benches/scripts/latency_readme.py --no-run    # re-read the raw output

Runs `cargo run --release -p tickless-benches --bin compare -- --only latency --no-syscalls`,
keeps the raw output in benches/results/latency.txt (the charts, benches/results/latency_*.svg,
are written by compare itself), and replaces the block between `<!-- latency:begin -->` and
`<!-- latency:end -->`, nothing else.
"""
import datetime
import os
import subprocess
import sys

from readme_block import ROOT, cpu_model, fields, replace_block

RAW = os.path.join(ROOT, "benches", "results", "latency.txt")
CMD = ["cargo", "run", "--release", "-q", "-p", "tickless-benches", "--bin", "compare", "--",
       "--only", "latency", "--no-syscalls"]


def num(r, key):
    v = r.get(key, "nan")
    try:
        x = float(v)
    except ValueError:
        return v
    if x != x:
        return ""
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


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
    rows = [fields(l) for l in text.splitlines() if l.startswith("workload=latency ")]
    zygos = [fields(l) for l in text.splitlines() if l.startswith("workload=latency_zygos ")]
    if not rows:
        sys.exit(f"no workload=latency line in {RAW}")
    took = next((l.split("took=")[1].split()[0] for l in text.splitlines()
                 if l.startswith("# latency: took=")), "?")
    lines = [
        "<!-- latency:begin -->",
        f"Measured {datetime.date.today().isoformat()} on {os.cpu_count()} CPUs ({cpu_model()}) "
        f"by `python3 benches/scripts/latency_readme.py{' --quick' if quick else ''}` "
        f"(`compare --only latency{' --quick' if quick else ''}`, {took}; raw output in "
        "[benches/results/latency.txt](results/latency.txt)). `closed`: the closed-loop "
        "maximum; `unloaded`: a low rate, for the ZygOS column; the fractions are of tokio's "
        "closed-loop maximum for the shape and placement. Latency in µs, from each request's "
        "scheduled send; `late` is the share of requests the generator itself sent over 1 ms "
        "late (a run with many is void); `waited`: the shares of the window the server and the "
        "generator were runnable but waiting for a CPU, others' processes holding it (over "
        "0.005, the point's p99 is the machine's as much as the runtime's).",
        "",
        "| shape | CPUs | load | runtime | p50 | p99 | p99.9 | achieved req/s | server CPU µs/req | late | waited (server, generator) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['shape']} | {r['cpus']} | {r['load']} | {r['runtime']} | {num(r, 'p50_us')} | "
            f"{num(r, 'p99_us')} | {num(r, 'p999_us')} | {num(r, 'achieved_rps')} | "
            f"{num(r, 'cpu_us_per_req')} | {r.get('late_share', '')} | "
            f"{r.get('server_waited', '')}, {r.get('gen_waited', '')} |"
        )
    if zygos:
        lines += [
            "",
            "ZygOS figure: the highest measured load (fraction of tokio's maximum) up to which "
            "p99 stays under 10x the unloaded median (0: not even the lowest):",
            "",
            "| shape | CPUs | runtime | unloaded p50 µs | p99 limit µs | load |",
            "|---|---|---|---:|---:|---:|",
        ]
        for z in zygos:
            lines.append(
                f"| {z['shape']} | {z['cpus']} | {z['runtime']} | {num(z, 'unloaded_p50_us')} | "
                f"{num(z, 'p99_limit_us')} | {z['zygos_load']} |"
            )
    charts = sorted({(r["shape"].replace("kv_tokio_shape", "kv").replace("kv_per_core", "kv"),
                      r["cpus"]) for r in rows})
    lines.append("")
    for shape, cpus in charts:
        lines.append(f"![latency {shape} {cpus}](results/latency_{shape}_{cpus}.svg)")
    lines.append("<!-- latency:end -->")
    replace_block("latency", lines)


if __name__ == "__main__":
    main()
