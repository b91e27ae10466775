#!/usr/bin/env python3
"""Runs `compare` (the full run), keeps its output, draws the chart and writes the README section.

    python3 benches/scripts/compare_readme.py            # run compare (a few minutes), then update
    python3 benches/scripts/compare_readme.py --quick    # the same from `compare --quick`
    python3 benches/scripts/compare_readme.py --no-run   # only re-read benches/results/compare.txt

Writes benches/results/compare.txt (compare's stdout as it is), benches/results/compare.svg (a
plain SVG written here, no plotting library), and the README block between
`<!-- compare:begin -->` and `<!-- compare:end -->` (created under a "## Benchmarks" heading,
before "## How the timers work", if missing); nothing else in the README is touched. Every
figure comes from compare's output: the tables are compare's own, the prose is filled in from
its result lines.
"""
import datetime
import html
import math
import os
import platform
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "benches", "results")
RAW = os.path.join(RESULTS, "compare.txt")
SVG = os.path.join(RESULTS, "compare.svg")
README = os.path.join(ROOT, "README.md")
BEGIN, END = "<!-- compare:begin -->", "<!-- compare:end -->"

COLORS = {
    "tickless": "#d62728",
    "tickless_spin50us": "#ff9896",
    "tickless_slack1ms": "#ff7f0e",
    "tokio": "#1f77b4",
    "smol": "#2ca02c",
    "monoio_legacy": "#9467bd",
    "monoio_uring": "#c5b0d5",
    "threads": "#7f7f7f",
    "floor": "#c7c7c7",
}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def ensure_strace():
    """compare counts system calls with strace; install it if it is missing (Debian, as root)."""
    if shutil.which("strace"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print("strace missing and cannot be installed here: compare will skip the syscall count")
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.run(["apt-get", "install", "-y", "-qq", "strace"], env=env).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "strace"], env=env)


def run_compare(extra):
    ensure_strace()
    os.makedirs(RESULTS, exist_ok=True)
    cmd = ["cargo", "run", "--release", "-p", "tickless-benches", "--bin", "compare", "--"] + extra
    print("running:", " ".join(cmd), file=sys.stderr)
    out = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    with open(RAW, "w") as f:
        f.write(out.stdout)
    if out.returncode != 0:
        print(f"compare exited {out.returncode}; its output is in {RAW}", file=sys.stderr)
    return out.stdout


def parse(text):
    """Result lines -> {(workload, runtime, labels): {metric: median}}."""
    results = {}
    for line in text.splitlines():
        if not line.startswith("workload="):
            continue
        labels, metrics = [], {}
        workload = runtime = None
        for tok in line.split():
            k, _, v = tok.partition("=")
            if k == "workload":
                workload = v
            elif k == "runtime":
                runtime = v
            else:
                try:
                    metrics[k] = float(v)
                except ValueError:
                    labels.append(tok)
        results[(workload, runtime, " ".join(labels))] = metrics
    return results


# The end of compare's output (the terms and the plain-words summary): not for the README.
TERMS_HEADING = "\n# Terms in the tables"


def sections(text):
    """compare's markdown sections (from the first `### ` heading to the terms at the end)."""
    i = text.find("\n### ")
    if i < 0:
        return ""
    j = text.find(TERMS_HEADING, i)
    return text[i + 1 : j if j >= 0 else len(text)].rstrip() + "\n"


def notes_of(text):
    """The `# note: ` lines, each joined with the `#   ` lines that continue it (compare wraps
    long notes)."""
    notes, in_note = [], False
    for line in text.splitlines():
        if line.startswith("# note: "):
            notes.append(line[len("# note: ") :])
            in_note = True
        elif in_note and line.startswith("#   "):
            notes[-1] += " " + line[len("#   ") :]
        else:
            in_note = False
    return notes


# ---- the chart ------------------------------------------------------------------------------


def panel(title, groups, runtimes, y0, width, log=False, unit=""):
    """Horizontal grouped bars. groups: [(name, {runtime: value})]. Returns (svg, height)."""
    left, right, bar, gap = 170, 90, 9, 10
    plot_w = width - left - right
    values = [v for _, vals in groups for v in vals.values() if v is not None and v > 0]
    if not values:
        return "", 0
    vmax = max(values)
    vmin = min(values)
    if log:
        lo = 10 ** math.floor(math.log10(vmin))
        hi = 10 ** math.ceil(math.log10(vmax))

        def scale(v):
            return plot_w * (math.log10(max(v, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    else:
        hi = vmax * 1.05

        def scale(v):
            return plot_w * v / hi

    out = [f'<text x="10" y="{y0 + 16}" font-size="14" font-weight="bold">{html.escape(title)}</text>']
    y = y0 + 28
    for name, vals in groups:
        present = [r for r in runtimes if vals.get(r) is not None]
        if not present:
            continue
        h = len(present) * bar
        out.append(
            f'<text x="{left - 8}" y="{y + h / 2 + 4:.1f}" font-size="12" text-anchor="end">'
            f"{html.escape(name)}</text>"
        )
        for r in present:
            v = vals[r]
            w = max(scale(v), 1.0)
            out.append(
                f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar - 1}" fill="{COLORS.get(r, "#444")}">'
                f"<title>{html.escape(r)}: {v:g}{unit}</title></rect>"
            )
            label = f"{v:,.0f}" if v >= 100 else f"{v:.3g}"
            out.append(
                f'<text x="{left + w + 4:.1f}" y="{y + bar - 1.5}" font-size="9" fill="#333">{label}{unit}</text>'
            )
            y += bar
        y += gap
    # axis
    out.append(f'<line x1="{left}" y1="{y0 + 26}" x2="{left}" y2="{y - gap + 2}" stroke="#000" stroke-width="0.8"/>')
    if log:
        t = lo
        while t <= hi * 1.0001:
            x = left + scale(t)
            out.append(f'<line x1="{x:.1f}" y1="{y0 + 26}" x2="{x:.1f}" y2="{y - gap + 2}" stroke="#ddd" stroke-width="0.6"/>')
            out.append(f'<text x="{x:.1f}" y="{y + 6}" font-size="9" text-anchor="middle" fill="#666">{t:g}{unit}</text>')
            t *= 10
        y += 12
    return "\n".join(out), y - y0 + 6


def chart(results):
    def get(w, r, m, labels=""):
        return results.get((w, r, labels), {}).get(m)

    width = 900
    pp_runtimes = ["tickless", "tickless_spin50us", "tokio", "smol", "monoio_legacy", "monoio_uring", "threads", "floor"]
    timer_runtimes = ["tickless", "tickless_slack1ms", "tokio", "smol", "monoio_legacy", "monoio_uring", "threads"]
    panels = [
        (
            "Pipe ping-pong: round trips per second (higher is better)",
            [
                (name, {r: get(w, r, "rtt_per_s") for r in pp_runtimes})
                for name, w in [
                    ("same core", "pingpong_same"),
                    ("across cores", "pingpong_cross"),
                    ("same core, 1 s timeouts", "pingpong_timeout"),
                ]
            ],
            pp_runtimes,
            False,
            "",
        ),
        (
            "Timer lateness, median (log scale, lower is better)",
            [
                ("sleep 100 µs", {r: get("sleep_precision", r, "late_p50_us", "sleep=100us") for r in timer_runtimes}),
                ("sleep 1 ms", {r: get("sleep_precision", r, "late_p50_us", "sleep=1ms") for r in timer_runtimes}),
                ("timer churn", {r: get("timer_churn", r, "late_p50_us") for r in timer_runtimes}),
            ],
            timer_runtimes,
            True,
            " µs",
        ),
        (
            "Timer churn, 1,000 tasks: cost (log scale, lower is better)",
            [
                ("wakeups per second", {r: get("timer_churn", r, "wakeups_per_s") for r in timer_runtimes}),
                ("CPU µs per fire", {r: get("timer_churn", r, "cpu_us_per_fire") for r in timer_runtimes}),
            ],
            timer_runtimes,
            True,
            "",
        ),
    ]
    body, y = [], 10
    for title, groups, runtimes, log, unit in panels:
        svg, h = panel(title, groups, runtimes, y, width, log, unit)
        body.append(svg)
        y += h + 10
    # legend
    x = 10
    used = [r for r in COLORS if any(r == k[1] for k in results)]
    for r in used:
        body.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{COLORS[r]}"/>')
        body.append(f'<text x="{x + 14}" y="{y + 9}" font-size="11">{r}</text>')
        x += 18 + 7 * len(r)
        if x > width - 120:
            x, y = 10, y + 16
    y += 24
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" viewBox="0 0 {width} {y}" '
        f'font-family="sans-serif">\n<rect width="100%" height="100%" fill="#fff"/>\n'
        + "\n".join(body)
        + "\n</svg>\n"
    )


# ---- prose from the figures -----------------------------------------------------------------


def fmt(v, digits=2):
    if v is None:
        return "n/a"
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) < 0.01:
        return f"{v:.1e}"
    return f"{v:.{digits}f}"


def tradeoffs(results):
    """The policy choice and the default-slack trade-off, in sentences filled from the figures."""

    def get(w, r, m, labels=""):
        return results.get((w, r, labels), {}).get(m)

    lines = []
    keeps = {}
    for p in ["eager", "onidle", "lazy"]:
        k = get("pingpong_timeout", f"tickless_{p}", "keep_paired")
        if k:
            keeps[p] = (k, get("pingpong_timeout", f"tickless_{p}", "rearms_per_msg"))
    if keeps:
        best = max(keeps, key=lambda p: keeps[p][0])
        parts = ", ".join(f"{p} {k:.2f} ({fmt(r)} re-arms per message)" for p, (k, r) in keeps.items())
        lines.append(
            f"**Re-arm policy.** With a 1 s timeout on every read, the share of the untimed rate each "
            f"policy keeps (paired: blocks with and without timeouts alternating in one process) is: "
            f"{parts}. `{best}` keeps the most. "
            "Eager and OnIdle pay one `timerfd_settime` per message (the syscall table shows it); "
            "Lazy leaves the stale, earlier arming in place and pays one spurious wakeup when it "
            "expires (a second after it was armed; "
            f"{fmt(get('pingpong_timeout', 'tickless_lazy', 'spurious_per_msg'), 4)} per message here). "
            "The 2013 hrtimer pipe-test regression, reproduced: "
            "re-programming the clock device on every cancel costs the ping-pong "
            + (
                f"{(1 - keeps['eager'][0] / keeps['lazy'][0]) * 100:.0f}% of its rate against Lazy."
                if "eager" in keeps and "lazy" in keeps
                else "a share of its rate."
            )
        )
    d = {m: get("timer_churn", "tickless", m) for m in ["wakeups_per_s", "cpu_us_per_fire", "late_p50_us", "late_p99_us"]}
    s = {m: get("timer_churn", "tickless_slack1ms", m) for m in d}
    t = {m: get("timer_churn", "tokio", m) for m in d}
    if all(v is not None for v in list(d.values()) + list(t.values())):
        lines.append(
            "**Timer churn at the defaults.** With no slack, tickless fires each timer at its own "
            f"instant: {fmt(d['late_p50_us'])} µs late at the median ({fmt(d['late_p99_us'])} µs p99) "
            f"against tokio's {fmt(t['late_p50_us'])} µs, but it wakes {fmt(d['wakeups_per_s'])} times "
            f"a second against tokio's {fmt(t['wakeups_per_s'])} and spends {fmt(d['cpu_us_per_fire'])} µs "
            f"of CPU per fire against {fmt(t['cpu_us_per_fire'])} µs: a wakeup serves "
            f"{get('timer_churn', 'tickless', 'fires_per_s') / d['wakeups_per_s']:.1f} timers on average "
            f"(tokio's {get('timer_churn', 'tokio', 'fires_per_s') / t['wakeups_per_s']:.0f}), and the "
            "wakeup is what costs."
            + (
                f" With 1 ms of slack it wakes {fmt(s['wakeups_per_s'])} times a second at "
                f"{fmt(s['cpu_us_per_fire'])} µs per fire and {fmt(s['late_p50_us'])} µs median lateness. "
                if all(v is not None for v in s.values())
                else " "
            )
            + "The default stays precise: timers that must be exact are the ones a runtime cannot "
            "guess, while a server whose timers may batch says so once with "
            "`Builder::default_slack` (or `sleep(d).slack(s)` per timer)."
        )
    return "\n\n".join(lines)


def readme_block(text, results):
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    kernel = platform.release()
    header = re.search(r"^# compare: (.*)$", text, re.M)
    took = re.search(r"took=(\d+)s", header.group(1)).group(1) if header else "?"
    notes = notes_of(text)
    size = re.search(r"size=(\w+)", header.group(1)).group(1) if header else "full"
    flag = {"full": "", "quick": " -- --quick", "smoke": " -- --smoke"}.get(size, "")
    cmd = "cargo run --release -p tickless-benches --bin compare" + flag
    runs = lambda prefix: max(
        (int(m.get("runs", 1)) for (w, _, _), m in results.items() if w.startswith(prefix)), default=0
    )
    pp_runs = runs("pingpong")
    timer_runs = max(runs("sleep"), runs("idle"), runs("timer"))
    lines = [
        BEGIN,
        f"Measured {datetime.date.today().isoformat()} on {os.cpu_count()} cores of {cpu_model()}, "
        f"Linux {kernel}, {rustc}, by `python3 benches/scripts/compare_readme.py`, which runs "
        f"`{cmd}` ({took} s) and keeps its output in "
        "[benches/results/compare.txt](benches/results/compare.txt). Every figure is the median of "
        f"{pp_runs} runs (ping-pong) or {timer_runs} (timer workloads), each in a fresh process, "
        "the contenders taken round-robin; in brackets, the ratio to tickless. Ping-pong "
        "sends a 4-byte message each way over two pipes; `threads` is two blocking threads "
        "(pipe-test), `floor` one thread making the round trip's four system calls back to back. "
        "Timer workloads run single-threaded on one pinned CPU; wakeups are the runtime threads' "
        "voluntary context switches (from /proc), CPU is `getrusage`. Each measurement waits for "
        "the machine to be quiet and is repeated if other processes ran meanwhile; even so, on "
        "this virtual machine two runs of one process can differ by more than some targets' "
        "margins, so the targets table gives the worst-to-best range over the runs and marks a "
        "verdict that some runs contradict as \"within the spread\".",
        "",
        "![compare chart](benches/results/compare.svg)",
        "",
    ]
    if notes:
        lines += ["Notes from the run: " + "; ".join(notes) + ".", ""]
    md = sections(text).replace("### ", "#### ")
    lines.append(md.rstrip())
    lines.append("")
    prose = tradeoffs(results)
    if prose:
        lines += [prose, ""]
    lines.append(END)
    return "\n".join(lines)


def write_readme(block):
    with open(README) as f:
        text = f.read()
    if BEGIN in text and END in text:
        new, n = re.subn(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: block, text, flags=re.S)
        if n != 1:
            sys.exit("README.md: more than one compare block")
    else:
        anchor = "## How the timers work"
        if anchor not in text:
            sys.exit(f"README.md has no '{anchor}' heading to put the Benchmarks section before")
        new = text.replace(anchor, "## Benchmarks\n\n" + block + "\n\n" + anchor, 1)
    with open(README, "w") as f:
        f.write(new)


def main():
    args = [a for a in sys.argv[1:] if a != "--no-run"]
    if "--no-run" in sys.argv:
        with open(RAW) as f:
            text = f.read()
    else:
        text = run_compare(args)
    results = parse(text)
    if not results:
        sys.exit(f"no result lines in compare's output ({RAW})")
    os.makedirs(RESULTS, exist_ok=True)
    with open(SVG, "w") as f:
        f.write(chart(results))
    write_readme(readme_block(text, results))
    print(f"wrote {os.path.relpath(RAW, ROOT)}, {os.path.relpath(SVG, ROOT)} and README.md's compare block")


if __name__ == "__main__":
    main()
