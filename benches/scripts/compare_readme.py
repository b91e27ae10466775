#!/usr/bin/env python3
"""Runs `compare` (the full run), keeps its output, draws the chart and writes the README section.

    python3 benches/scripts/compare_readme.py            # run compare (a few minutes), then update
    python3 benches/scripts/compare_readme.py --quick    # the same from `compare --quick`
    python3 benches/scripts/compare_readme.py --no-run   # only re-read benches/results/compare.txt

Writes benches/results/compare.txt (compare's stdout as it is), benches/results/compare.svg and
benches/results/frontier.svg (timer_churn's CPU per fire against lateness; plain SVGs written
here, no plotting library), the README block between `<!-- compare:begin -->` and
`<!-- compare:end -->` of benches/README.md and the one between `<!-- defaults:begin -->` and `<!-- defaults:end -->`
(the body of "## Defaults, and what they cost"); nothing else is touched. Every
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

from readme_block import cpu_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "benches", "results")
RAW = os.path.join(RESULTS, "compare.txt")
SVG = os.path.join(RESULTS, "compare.svg")
FRONTIER_SVG = os.path.join(RESULTS, "frontier.svg")
README = os.path.join(ROOT, "benches", "README.md")
BEGIN, END = "<!-- compare:begin -->", "<!-- compare:end -->"
DEFAULTS_BEGIN, DEFAULTS_END = "<!-- defaults:begin -->", "<!-- defaults:end -->"

# The timer_churn frontier: tickless's fixed default slacks, joined as a curve in this order;
# its other settings and the default as points on their own; every peer as a point.
FRONTIER_CURVE = [
    ("tickless_slack0", "0"),
    ("tickless_slack10us", "10 µs"),
    ("tickless_slack100us", "100 µs"),
    ("tickless_slack1ms", "1 ms"),
]
FRONTIER_POINTS = [
    ("tickless_prop64", "1/64"),
    ("tickless_prop16", "1/16"),
    ("tickless_prop4", "1/4"),
    ("tickless_knee8ms", "len²/8ms"),
    ("tickless_nolead", "no lead"),
    ("tickless_nogov", "governor off"),
    ("tickless_spin50us", "spin 50 µs"),
    ("tickless", "default"),
]
FRONTIER_PEERS = ["tokio", "smol", "monoio_legacy", "monoio_uring"]

COLORS = {
    "tickless": "#d62728",
    "tickless_spin50us": "#ff9896",
    "tickless_slack1ms": "#ff7f0e",
    "tickless_slack0": "#8c564b",
    "tickless_slack10us": "#c49c94",
    "tickless_slack100us": "#e377c2",
    "tickless_prop4": "#bcbd22",
    "tickless_prop16": "#dbdb8d",
    "tickless_prop64": "#17becf",
    "tickless_knee8ms": "#9edae5",
    "tickless_nolead": "#f7b6d2",
    "tokio": "#1f77b4",
    "smol": "#2ca02c",
    "monoio_legacy": "#9467bd",
    "monoio_uring": "#c5b0d5",
    "threads": "#7f7f7f",
    "floor": "#c7c7c7",
}


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


def frontier(results):
    """CPU per fire against median lateness on timer_churn, both log scale: tickless's fixed
    slacks as a curve, its shaped defaults as points, the peers as points."""

    def xy(r):
        m = results.get(("timer_churn", r, ""), {})
        x, y = m.get("late_p50_us"), m.get("cpu_us_per_fire")
        return (x, y) if x and y else None

    pts = [(r, lab, xy(r)) for r, lab in FRONTIER_CURVE + FRONTIER_POINTS] + [
        (r, r, xy(r)) for r in FRONTIER_PEERS
    ]
    pts = [p for p in pts if p[2]]
    if not pts:
        return None
    width, height, left, right, top, bottom = 900, 520, 70, 30, 40, 50
    xs = [p[2][0] for p in pts]
    ys = [p[2][1] for p in pts]
    x0, x1 = 10 ** math.floor(math.log10(min(xs))), 10 ** math.ceil(math.log10(max(xs)))
    y0, y1 = 10 ** math.floor(math.log10(min(ys))), 10 ** math.ceil(math.log10(max(ys)))

    def sx(v):
        return left + (width - left - right) * (math.log10(v) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))

    def sy(v):
        return height - bottom - (height - top - bottom) * (math.log10(v) - math.log10(y0)) / (math.log10(y1) - math.log10(y0))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
        '<rect width="100%" height="100%" fill="#fff"/>',
        '<text x="10" y="22" font-size="14" font-weight="bold">timer_churn frontier: CPU per fire '
        "against median lateness (both log scale; lower left is better)</text>",
    ]
    t = x0
    while t <= x1 * 1.0001:
        out.append(f'<line x1="{sx(t):.1f}" y1="{top}" x2="{sx(t):.1f}" y2="{height - bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{sx(t):.1f}" y="{height - bottom + 14}" font-size="10" text-anchor="middle">{t:g} µs</text>')
        t *= 10
    t = y0
    while t <= y1 * 1.0001:
        out.append(f'<line x1="{left}" y1="{sy(t):.1f}" x2="{width - right}" y2="{sy(t):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{sy(t) + 4:.1f}" font-size="10" text-anchor="end">{t:g} µs</text>')
        t *= 10
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - 12}" font-size="12" text-anchor="middle">late p50 (µs)</text>')
    out.append(f'<text x="16" y="{(top + height - bottom) / 2}" font-size="12" transform="rotate(-90 16 {(top + height - bottom) / 2})" text-anchor="middle">CPU per fire (µs)</text>')
    curve = [xy(r) for r, _ in FRONTIER_CURVE if xy(r)]
    if len(curve) > 1:
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in sorted(curve))
        out.append(f'<polyline points="{path}" fill="none" stroke="{COLORS["tickless"]}" stroke-width="1.5"/>')
    for r, lab, (x, y) in pts:
        peer = r in FRONTIER_PEERS
        color = COLORS.get(r, "#444") if peer else COLORS["tickless"]
        if r == "tickless":
            out.append(f'<rect x="{sx(x) - 6:.1f}" y="{sy(y) - 6:.1f}" width="12" height="12" fill="{color}"><title>{html.escape(r)}: {x:g} µs, {y:g} µs</title></rect>')
        elif peer:
            out.append(f'<path d="M{sx(x):.1f},{sy(y) - 7:.1f} l6,11 l-12,0 z" fill="{color}"><title>{html.escape(r)}: {x:g} µs, {y:g} µs</title></path>')
        else:
            hollow = r not in dict(FRONTIER_CURVE)
            fill = "#fff" if hollow else color
            out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="4.5" fill="{fill}" stroke="{color}" stroke-width="1.5"><title>{html.escape(r)}: {x:g} µs, {y:g} µs</title></circle>')
        label = lab if peer else f"tickless {lab}" if r != "tickless" else "tickless default"
        out.append(f'<text x="{sx(x) + 8:.1f}" y="{sy(y) - 6:.1f}" font-size="10" fill="#333">{html.escape(label)}</text>')
    out.append(
        f'<text x="{left + 6}" y="{top + 12}" font-size="10" fill="#555">line: tickless at a fixed default slack (0, 10 µs, 100 µs, 1 ms); '
        "square: the default; hollow: other shaped defaults; triangles: the peers</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


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
            + (
                "Eager and OnIdle pay one `timerfd_settime` per message (the syscall table shows it); "
                if keeps.get("eager", (0, 0))[1] and keeps["eager"][1] >= 0.5
                else "Eager and OnIdle re-program when the end of the earliest timeout's window moves "
                "(the figures in brackets; once per message is the 2013 hrtimer pipe-test regression, "
                "`rt_pingpong`'s Eager test). "
            )
            + "Lazy leaves the stale, earlier arming in place and pays one spurious wakeup when it "
            "expires (a second after it was armed; "
            f"{fmt(get('pingpong_timeout', 'tickless_lazy', 'spurious_per_msg'), 4)} per message here). "
            + (
                f"Against Lazy, Eager keeps {(keeps['eager'][0] / keeps['lazy'][0]) * 100:.0f}% of its rate."
                if "eager" in keeps and "lazy" in keeps
                else ""
            )
        )
    d = {m: get("timer_churn", "tickless", m) for m in ["wakeups_per_s", "cpu_us_per_fire", "late_p50_us", "late_p99_us"]}
    z = {m: get("timer_churn", "tickless_slack0", m) for m in d}
    s = {m: get("timer_churn", "tickless_slack1ms", m) for m in d}
    t = {m: get("timer_churn", "tokio", m) for m in d}
    if all(v is not None for v in list(d.values()) + list(t.values())):
        exact = (
            f"With no slack (`tickless_slack0`) tickless fires each timer at its own instant: "
            f"{fmt(z['late_p50_us'])} µs late at the median, but {fmt(z['wakeups_per_s'])} wakeups a "
            f"second and {fmt(z['cpu_us_per_fire'])} µs of CPU per fire, a wakeup serving "
            f"{get('timer_churn', 'tickless_slack0', 'fires_per_s') / z['wakeups_per_s']:.1f} timers "
            f"(tokio's {get('timer_churn', 'tokio', 'fires_per_s') / t['wakeups_per_s']:.0f}): the wakeup "
            "is what costs. "
            if all(v is not None for v in z.values())
            else ""
        )
        lines.append(
            "**Timer churn at the defaults.** "
            + exact
            + f"The default slack (a share of each timer's length that grows with it, up to 1,024 µs) "
            f"wakes {fmt(d['wakeups_per_s'])} times a second against tokio's {fmt(t['wakeups_per_s'])}, "
            f"spends {fmt(d['cpu_us_per_fire'])} µs of CPU per fire against {fmt(t['cpu_us_per_fire'])} µs "
            f"({d['cpu_us_per_fire'] / t['cpu_us_per_fire']:.2f}x) and is {fmt(d['late_p50_us'])} µs late at "
            f"the median against {fmt(t['late_p50_us'])} µs ({d['late_p50_us'] / t['late_p50_us']:.2f}x)."
            + (
                f" A fixed 1 ms slack: {fmt(s['wakeups_per_s'])} wakeups a second "
                f"({s['wakeups_per_s'] / t['wakeups_per_s']:.2f}x tokio's), {fmt(s['cpu_us_per_fire'])} µs per "
                f"fire, {fmt(s['late_p50_us'])} µs median lateness."
                if all(v is not None for v in s.values())
                else ""
            )
        )
    return "\n\n".join(lines)


def defaults_block(results):
    """The README's "Defaults, and what they cost": each default and its price, every figure
    from this run."""

    def get(w, r, m, labels=""):
        return results.get((w, r, labels), {}).get(m)

    def ratio(a, b):
        return f"{a / b:.2f}x" if a is not None and b else "n/a"

    lines = [DEFAULTS_BEGIN, "(Written by `python3 benches/scripts/compare_readme.py` from the run above.)", ""]
    lazy = get("pingpong_timeout", "tickless_lazy", "keep_paired")
    eager = get("pingpong_timeout", "tickless_eager", "keep_paired")
    lines.append(
        "- **Re-arm policy `Lazy`**: see the policy table and `RearmPolicy`'s docs. With a 1 s timeout "
        f"on every read it keeps {fmt(lazy)} of the untimed ping-pong rate (paired) against Eager's "
        f"{fmt(eager)}, and re-programs the timerfd "
        f"{fmt(get('pingpong_timeout', 'tickless_lazy', 'rearms_per_msg'), 4)} times per message."
    )
    c = lambda r, m: get("timer_churn", r, m)
    sp = lambda r, m: get("sleep_precision", r, m, "sleep=100us")
    lines.append(
        "- **Clock event device: the timerfd** (`ClockDevice::TimerFd`; `Builder::clock_device`). "
        "`ClockDevice::Epoll` has no timerfd: the core's `epoll_pwait2` times out at the deadline, "
        "which saves the `timerfd_settime` of each timer wakeup. On `timer_churn` it spends "
        f"{fmt(c('tickless_epoll', 'cpu_us_per_fire'))} µs of CPU per fire "
        f"({fmt(c('tickless_epoll_onidle', 'cpu_us_per_fire'))} µs with `OnIdle`) against the "
        f"timerfd's {fmt(c('tickless', 'cpu_us_per_fire'))} µs "
        f"({ratio(c('tickless_epoll', 'cpu_us_per_fire'), c('tickless', 'cpu_us_per_fire'))}), at "
        f"{fmt(c('tickless_epoll', 'wakeups_per_s'))} wakeups a second; `sleep_precision` 100 µs "
        f"{fmt(sp('tickless_epoll', 'late_p50_us'))} / {fmt(sp('tickless_epoll', 'late_p99_us'))} µs "
        "late (p50 / p99); with a 1 s timeout per read it keeps "
        f"{fmt(get('pingpong_timeout', 'tickless_epoll', 'keep_paired'))} of the untimed rate, at "
        f"{fmt(get('pingpong_timeout', 'tickless_epoll', 'rtt_per_s'))} round trips a second against "
        f"the timerfd's {fmt(get('pingpong_timeout', 'tickless', 'rtt_per_s'))} "
        f"({ratio(get('pingpong_timeout', 'tickless_epoll', 'rtt_per_s'), get('pingpong_timeout', 'tickless', 'rtt_per_s'))}): "
        "while a deadline is armed (a pending timeout's, or Lazy's stale one) every park reads "
        "the clock twice, before the wait for its timeout and after it for expiry, where the "
        "timerfd's stale arming costs a park nothing. The wakeup, not the re-arm, is most of what a fire costs, so the saved system "
        "call does not stand out of the runs' noise in CPU per fire: the timerfd stays the "
        "default, which works on every kernel and keeps the re-arm policies' meaning."
    )
    nl = lambda m: sp("tickless_nolead", m)
    if nl("late_p50_us") is not None and c("tickless_nolead", "wakeups_per_s") is not None:
        lines.append(
            "- **Wakeup lead, learned, at most 100 µs** (`Builder::wakeup_lead_max`; "
            "`DEFAULT_WAKEUP_LEAD_MAX`). A parked core runs some time after its clock event device "
            "fires (the kernel, the hypervisor's timer delivery, the scheduler): each core keeps a "
            "running 95th percentile of that latency and programs the device that far ahead of the end "
            "of the earliest window; a wakeup that comes before anything is due is waited out awake "
            "(at most the lead; a window wider than the lead needs no waiting). `sleep_precision` "
            f"100 µs is {fmt(sp('tickless', 'late_p50_us'))} / {fmt(sp('tickless', 'late_p99_us'))} µs "
            f"late (p50 / p99) with it and {fmt(nl('late_p50_us'))} / {fmt(nl('late_p99_us'))} µs "
            "without (`tickless_nolead`). On `timer_churn` every window ends the lead sooner, as if "
            f"the slack were that much smaller: {fmt(c('tickless', 'wakeups_per_s'))} wakeups a second "
            f"against {fmt(c('tickless_nolead', 'wakeups_per_s'))} without "
            f"({ratio(c('tickless', 'wakeups_per_s'), c('tickless_nolead', 'wakeups_per_s'))}), "
            f"{fmt(c('tickless', 'cpu_us_per_fire'))} against {fmt(c('tickless_nolead', 'cpu_us_per_fire'))} µs "
            f"of CPU per fire ({ratio(c('tickless', 'cpu_us_per_fire'), c('tickless_nolead', 'cpu_us_per_fire'))}), "
            f"{fmt(c('tickless', 'late_p50_us'))} against {fmt(c('tickless_nolead', 'late_p50_us'))} µs median "
            "lateness, and a timer that waited its whole window is no longer the wakeup's latency "
            "past it."
        )
    lines.append(
        "- **Default slack: a share of a timer's length that grows with it**, `length² / 2 ms`, at most "
        "1,024 µs, rounded down to 1,024 µs / 2^k (`Builder::default_slack_growing`; "
        "`DEFAULT_SLACK_KNEE`, `DEFAULT_SLACK_MAX`): a 100 µs sleep may be 4 µs late, a 1 ms one "
        "256 µs, anything from 1.43 ms on 1,024 µs. A core wakes at the end of the earliest window "
        "(deadline plus slack) and fires every timer due by then: the fewest wakeups that keep "
        "each timer within its slack. A timer that must be exact says "
        "`sleep(d).slack(Duration::ZERO)`; a runtime, `Builder::default_slack(Duration::ZERO)`."
    )
    lines.append(
        f"  - What it costs in precision: `sleep_precision` 100 µs is {fmt(sp('tickless', 'late_p50_us'))} µs "
        f"late at the median and {fmt(sp('tickless', 'late_p99_us'))} µs at p99 "
        f"(with no slack: {fmt(sp('tickless_slack0', 'late_p50_us'))} / {fmt(sp('tickless_slack0', 'late_p99_us'))} µs; "
        f"tokio: {fmt(sp('tokio', 'late_p50_us'))} / {fmt(sp('tokio', 'late_p99_us'))} µs)."
    )
    lines.append(
        f"  - What it saves: on `timer_churn` (1,000 tasks on 1-100 ms sleeps) it wakes "
        f"{fmt(c('tickless', 'wakeups_per_s'))} times a second "
        f"({ratio(c('tickless', 'wakeups_per_s'), c('tokio', 'wakeups_per_s'))} tokio's; with no slack "
        f"{fmt(c('tickless_slack0', 'wakeups_per_s'))}), at {fmt(c('tickless', 'cpu_us_per_fire'))} µs of CPU "
        f"per fire ({ratio(c('tickless', 'cpu_us_per_fire'), c('tokio', 'cpu_us_per_fire'))} tokio's; "
        f"no slack {ratio(c('tickless_slack0', 'cpu_us_per_fire'), c('tokio', 'cpu_us_per_fire'))}) and "
        f"{fmt(c('tickless', 'late_p50_us'))} µs median lateness "
        f"({ratio(c('tickless', 'late_p50_us'), c('tokio', 'late_p50_us'))} tokio's)."
    )
    lines.append(
        "  - Why this shape: the frontier chart and table. What separates the slack settings' CPU per "
        "fire is their wakeups, and a wakeup serves the timers whose windows it falls in, so what "
        "decides the cost is the share of timers with windows of about a millisecond. A fixed share of the "
        f"length (1/16: {fmt(c('tickless_prop16', 'wakeups_per_s'))} wakeups a second, "
        f"{fmt(c('tickless_prop16', 'cpu_us_per_fire'))} µs per fire; 1/4: "
        f"{fmt(c('tickless_prop4', 'wakeups_per_s'))}, {fmt(c('tickless_prop4', 'cpu_us_per_fire'))} µs) "
        "leaves the timers of a few milliseconds narrow windows of their own; a share that grows "
        "with the length gives them a millisecond, which comes close to a fixed 1 ms slack "
        f"({fmt(c('tickless_slack1ms', 'wakeups_per_s'))} wakeups a second, "
        f"{fmt(c('tickless_slack1ms', 'cpu_us_per_fire'))} µs per fire), while short sleeps, which a "
        "wakeup serves alone anyway, stay precise. No default slack exceeds 1,024 µs, about what "
        f"tokio's millisecond wheel adds to every timer (its median lateness here: "
        f"{fmt(c('tokio', 'late_p50_us'))} µs)."
    )
    lines.append(DEFAULTS_END)
    return "\n".join(lines)


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
        "[benches/results/compare.txt](results/compare.txt). Every figure is the median of "
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
        "![compare chart](results/compare.svg)",
        "",
        "![timer_churn frontier](results/frontier.svg)",
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


def write_readme(block, defaults=None):
    with open(README) as f:
        text = f.read()
    if defaults is not None:
        if DEFAULTS_BEGIN in text and DEFAULTS_END in text:
            text = re.sub(
                re.escape(DEFAULTS_BEGIN) + r".*?" + re.escape(DEFAULTS_END), lambda _: defaults, text, flags=re.S
            )
        else:
            heading = "## Defaults, and what they cost\n"
            i = text.find(heading)
            if i < 0:
                sys.exit("benches/README.md has no '## Defaults, and what they cost' heading")
            j = text.find("\n## ", i + len(heading))
            text = text[: i + len(heading)] + "\n" + defaults + "\n" + text[j:]
    if BEGIN in text and END in text:
        new, n = re.subn(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: block, text, flags=re.S)
        if n != 1:
            sys.exit("benches/README.md: more than one compare block")
    else:
        sys.exit("benches/README.md has no compare block (<!-- compare:begin --> ... end)")
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
    svg = frontier(results)
    if svg:
        with open(FRONTIER_SVG, "w") as f:
            f.write(svg)
    write_readme(readme_block(text, results), defaults_block(results))
    print(f"wrote {os.path.relpath(RAW, ROOT)}, {os.path.relpath(SVG, ROOT)} and benches/README.md's compare block")


if __name__ == "__main__":
    main()
