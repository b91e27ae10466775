#!/usr/bin/env python3
"""Instructions a never-firing request timeout costs through the public path, for tickless and
tokio, counted by callgrind; and instructions per timer fire on a paused clock.

    python3 benches/scripts/timeout_cost.py            # measure, then update benches/README.md
    python3 benches/scripts/timeout_cost.py --no-readme # measure and print only
    python3 benches/scripts/timeout_cost.py --builder stall=off --only tickless
        # tickless's runtimes built with TICKLESS_BENCH_BUILDER=stall=off (see
        # benches/src/rt/tickless.rs `from_env`); prints only, never touches the README

Method (setup cancels out: two run lengths are subtracted):

- `compare __child smoke pingpong_same <rt> rtts=N` and `pingpong_timeout` (the same round trip
  with a 1 s `timeout` around each of its two reads) under `valgrind --tool=callgrind`, at
  N = 20,000 and 60,000: (Ir(60,000) - Ir(20,000)) / 40,000 is a round trip's instructions, and
  (timeout's - plain's) / 2 a timeout's.
- `churn_paused <rt> N` (timer_churn's 1,000 tasks on a paused clock) at N = 10 and 30 sleeps a
  task: (Ir(30) - Ir(10)) / 20,000 is a fire's instructions (a sleep made, registered, fired and
  its task woken and polled).

The README block between `<!-- timeout-cost:begin -->` and `<!-- timeout-cost:end -->` is
replaced; nothing else is touched.
"""
import datetime
import os
import re
import subprocess
import sys

from readme_block import ROOT, cpu_model, replace_block

RUNTIMES = ["tickless", "tokio"]
RTTS = (20_000, 60_000)
SLEEPS = (10, 30)
CHURN_TASKS = 1_000


def flag(name):
    """The value after `name` on the command line, or None."""
    if name in sys.argv:
        i = sys.argv.index(name)
        if i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        sys.exit(f"{name} needs a value")
    return None


# Settings every tickless runtime of the run takes (`TICKLESS_BENCH_BUILDER`), or None.
BUILDER = flag("--builder")


def instructions(cmd):
    """Instructions callgrind counts for one run of `cmd`."""
    env = dict(os.environ)
    env.pop("TICKLESS_BENCH_BUILDER", None)
    if BUILDER is not None:
        env["TICKLESS_BENCH_BUILDER"] = BUILDER
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    m = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or not m:
        sys.exit(f"{' '.join(cmd)} failed under callgrind:\n{out.stdout}\n{out.stderr}")
    return int(m.group(1))


def per_round_trip(workload, rt):
    compare = os.path.join(ROOT, "target", "release", "compare")
    short, long = (
        instructions([compare, "__child", "smoke", workload, rt, f"rtts={n}"]) for n in RTTS
    )
    return (long - short) / (RTTS[1] - RTTS[0])


def per_fire(rt):
    churn = os.path.join(ROOT, "target", "release", "examples", "churn_paused")
    short, long = (instructions([churn, rt, str(n)]) for n in SLEEPS)
    return (long - short) / (CHURN_TASKS * (SLEEPS[1] - SLEEPS[0]))


def main():
    for build in (
        ["--bin", "compare"],
        ["--example", "churn_paused", "--features", "tokio-test-util"],
    ):
        subprocess.run(
            ["cargo", "build", "--release", "-p", "tickless-benches"] + build,
            cwd=ROOT,
            check=True,
        )
    only = flag("--only")
    runtimes = only.split(",") if only else RUNTIMES
    if BUILDER is not None:
        print(f"TICKLESS_BENCH_BUILDER={BUILDER}", flush=True)
    rows = {}
    for rt in runtimes:
        plain = per_round_trip("pingpong_same", rt)
        timed = per_round_trip("pingpong_timeout", rt)
        fire = per_fire(rt)
        rows[rt] = (plain, timed, (timed - plain) / 2, fire)
        print(
            f"runtime={rt} rtt_instr={plain:.0f} rtt_timeout_instr={timed:.0f} "
            f"timeout_instr={(timed - plain) / 2:.0f} fire_instr={fire:.0f}",
            flush=True,
        )
    if set(rows) != set(RUNTIMES):
        return
    tl, tk = rows["tickless"], rows["tokio"]
    print(
        f"ratio timeout={tl[2] / tk[2]:.2f} fire={tl[3] / tk[3]:.2f} (tickless / tokio)",
        flush=True,
    )
    if "--no-readme" in sys.argv or BUILDER is not None:
        return
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    lines = [
        "<!-- timeout-cost:begin -->",
        f"Measured {datetime.date.today().isoformat()} on {cpu_model()}, {rustc}, by "
        "`python3 benches/scripts/timeout_cost.py` (callgrind instruction counts, two run "
        "lengths subtracted; the timeout is `time::timeout(1 s, read)`, two a round trip; a "
        "fire is timer_churn on a paused clock):",
        "",
        "| runtime | round trip | round trip with timeouts | **a timeout** | a timer fire |",
        "|---|---:|---:|---:|---:|",
    ]
    for rt in RUNTIMES:
        plain, timed, timeout, fire = rows[rt]
        lines.append(f"| {rt} | {plain:,.0f} | {timed:,.0f} | **{timeout:,.0f}** | {fire:,.0f} |")
    lines.append(
        f"| tickless / tokio | {tl[0] / tk[0]:.2f} | {tl[1] / tk[1]:.2f} | "
        f"**{tl[2] / tk[2]:.2f}** | {tl[3] / tk[3]:.2f} |"
    )
    lines.append("<!-- timeout-cost:end -->")
    replace_block("timeout-cost", lines)


if __name__ == "__main__":
    main()
