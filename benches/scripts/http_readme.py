#!/usr/bin/env python3
"""Runs the HTTP load comparison and writes its figures into benches/README.md.

    python3 benches/scripts/http_readme.py [--app axum|split] [--rounds N]  # run http_load.sh, update README.md
    python3 benches/scripts/http_readme.py [--app axum] --no-run      # re-read the raw output

The hello servers (default): raw output in benches/results/http_load.txt, README block between
`<!-- http-figures:begin -->` and `<!-- http-figures:end -->`. `--app axum` (the axum app of
`ecosystem/examples/`, `http_load.sh --app axum`): benches/results/http_load_axum.txt and the
block between `<!-- http-axum-figures:begin -->` and `<!-- http-axum-figures:end -->`. Only that
block is replaced. Where perf is installed, the run includes `http_load.sh --syscalls` (one
more short run of each server, under perf stat) and the block gives the system calls per request.
"""
import datetime
import os
import re
import shutil
import subprocess
import sys

from readme_block import ROOT, fields, replace_block

# Per app: raw output file, README marker, workload name, the two servers' names in the table.
APPS = {
    "hello": ("http_load.txt", "http-figures", "http_hello",
              "tickless (`hello_http`)", "tokio multi-thread (`hello_http_tokio`)"),
    "axum": ("http_load_axum.txt", "http-axum-figures", "http_axum",
             "axum on tickless (`axum`: `tickless_http::run`, tickless `TimeoutLayer`)",
             "axum on tokio multi-thread (`axum_tokio`: `axum::serve`, tower-http `TimeoutLayer`)"),
    # `http_load.sh --split`: the hello servers alone on CPU 0, wrk alone on CPU 1.
    "split": ("http_load_split.txt", "http-split-figures", "http_hello",
              "tickless (`hello_http --cores 1`)", "tokio (`hello_http_tokio --threads 1`)"),
}


def main():
    rounds = "5"
    if "--rounds" in sys.argv:
        rounds = sys.argv[sys.argv.index("--rounds") + 1]
    app = "hello"
    if "--app" in sys.argv:
        app = sys.argv[sys.argv.index("--app") + 1]
    if app not in APPS:
        sys.exit(f"unknown app {app!r}: one of {', '.join(APPS)}")
    raw_name, marker, workload, tickless_name, tokio_name = APPS[app]
    raw = os.path.join(ROOT, "benches", "results", raw_name)
    if "--no-run" not in sys.argv:
        out = subprocess.run(
            ["bash", os.path.join(ROOT, "benches", "scripts", "http_load.sh"),
             *(["--app", "hello", "--split"] if app == "split" else ["--app", app]),
             "--rounds", rounds, *(["--syscalls"] if shutil.which("perf") else [])],
            cwd=ROOT, check=True, capture_output=True, text=True,
        ).stdout
        os.makedirs(os.path.dirname(raw), exist_ok=True)
        with open(raw, "w") as f:
            f.write(out)
    with open(raw) as f:
        text = f.read()
    # The rounds the raw output holds (with --no-run, not the --rounds default).
    rounds = re.search(r"^# medians over (\d+) rounds", text, re.M).group(1)
    medians = text.split("# medians over", 1)[1]
    header = [l[2:] for l in text.splitlines() if l.startswith("# ") and "CPUs" in l][:1]
    setup = [l[2:] for l in text.splitlines() if l.startswith("# wrk")][:1]
    rows, calls = {}, {}
    for line in medians.splitlines():
        if line.startswith(f"workload={workload} "):
            f = fields(line)
            (calls if "syscalls_per_req" in f else rows)[f["runtime"]] = f
    ratio_line = next(l for l in medians.splitlines() if l.startswith("ratio "))
    t, k = rows["tickless"], rows["tokio"]

    def r(m):
        return float(t[m]) / float(k[m])

    # How busy the machine was before each run (http_load.sh waits for it to be quiet).
    quiet = [int(m) for m in re.findall(r"^# machine (\d+)% busy before the run", text, re.M)]
    busy = [int(m) for m in re.findall(r"^# WARNING: the machine stayed busy \((\d+)%\)", text, re.M)]
    noise = ""
    if quiet or busy:
        noise = f"; {len(quiet)} of {len(quiet) + len(busy)} runs started on a machine at most 10% busy"
        if busy:
            noise += f", {len(busy)} on one still {min(busy)}-{max(busy)}% busy after 2 minutes of waiting"
    app_flag = "" if app == "hello" else f"--app {app} "
    lines = [f"<!-- {marker}:begin -->"]
    if app == "axum":
        lines += [
            "The same comparison for an axum 0.8 app (`ecosystem/examples/axum.rs` and "
            "`axum_tokio.rs`: a `Router` with a JSON route on shared state, a slow route and a "
            "10 s `TimeoutLayer`), loaded on `GET /json`; `tickless_http::run` against "
            "`axum::serve`.",
            "",
        ]
    lines += [
        f"Measured {datetime.date.today().isoformat()} on {' '.join(header)}, by "
        f"`python3 benches/scripts/http_readme.py {app_flag}--rounds {rounds}` (medians over the "
        f"rounds of {' '.join(setup)}; raw output in `benches/results/{raw_name}`; "
        + ("wrk on a CPU of its own" if app == "split" else "wrk shares the CPUs with the server")
        + f"{noise}):",
        "",
        "| runtime | requests/s | p50 µs | p90 µs | p99 µs | server CPU µs per request "
        "| of which in the kernel | server waiting for a CPU, µs per request "
        "| server preempted, per 1k requests |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def opt(f, m):
        return f.get(m, "n/a")

    def ropt(m):
        try:
            return f"{r(m):.2f}x"
        except (KeyError, ValueError, ZeroDivisionError):
            return "n/a"

    def pct(f):
        return f"{f['kernel_cpu_pct']}%" if "kernel_cpu_pct" in f else "n/a"

    for name, f in ((tickless_name, t), (tokio_name, k)):
        lines.append(
            f"| {name} | {float(f['rps']):,.0f} | {f['p50_us']} | {f['p90_us']} | {f['p99_us']} "
            f"| {f['cpu_us_per_req']} | {pct(f)} | {opt(f, 'run_delay_us_per_req')} "
            f"| {opt(f, 'preempted_per_1k_req')} |"
        )
    lines.append(
        f"| tickless / tokio | {r('rps'):.2f}x | {r('p50_us'):.2f}x | {r('p90_us'):.2f}x "
        f"| {r('p99_us'):.2f}x | {r('cpu_us_per_req'):.2f}x | {ropt('kernel_cpu_pct')} "
        f"| {ropt('run_delay_us_per_req')} "
        f"| {ropt('preempted_per_1k_req')} |"
    )
    lines += ["", "Targets: `" + ratio_line.split(" ", 2)[2] + "`"]
    if "tickless" in calls and "tokio" in calls:
        def per_call(f):
            named = [(k, float(v)) for k, v in f.items()
                     if k not in ("workload", "runtime", "syscalls_per_req", "requests")
                     and re.fullmatch(r"[\d.]+", v) and float(v) >= 0.001]
            named.sort(key=lambda kv: -kv[1])
            return ", ".join(f"`{k}` {v:.3f}" for k, v in named)
        lines += [
            "",
            "System calls per request (`http_load.sh --syscalls`: one more 2 s run of each "
            "server under `perf stat -e raw_syscalls:sys_enter`, not timed): tickless "
            f"{float(calls['tickless']['syscalls_per_req']):.3f} ({per_call(calls['tickless'])}), "
            f"tokio {float(calls['tokio']['syscalls_per_req']):.3f} ({per_call(calls['tokio'])}).",
        ]
    lines.append(f"<!-- {marker}:end -->")
    replace_block(marker, lines)


if __name__ == "__main__":
    main()
