#!/usr/bin/env python3
"""What the observers (the stall detector and the metrics) cost a same-core round trip, in
instructions counted by callgrind.

    python3 benches/scripts/observer_cost.py             # measure, then update benches/README.md
    python3 benches/scripts/observer_cost.py --no-readme # measure and print only

Method: the same `compare` binary built twice, once as everyone builds it and once with
`RUSTFLAGS="--cfg tickless_unwatched"` (into `target/unwatched`), a build where the hot path's
observers do nothing (`executor/src/worker/watch.rs`, `WATCHED`): no poll word, no task id or
spawn location published for the watchdog, no rousing of a sleeping watchdog, no `CoreStats`
counter (except the one harvesting reads). That build's detector, harvesting and counts do not
work; it exists only to be measured against. Each runs `compare __child smoke pingpong_same
tickless rtts=N` under `valgrind --tool=callgrind` at N = 20,000 and 60,000: (Ir(60,000) -
Ir(20,000)) / 40,000 is a round trip's instructions. The I/O crate's syscall counters are
not part of it (the tests count syscalls through them).

The README block between `<!-- observer-cost:begin -->` and `<!-- observer-cost:end -->` is
replaced; nothing else is touched.
"""
import datetime
import os
import subprocess
import sys

from readme_block import ROOT, cpu_model, replace_block
from timeout_cost import RTTS, instructions

UNWATCHED_DIR = os.path.join(ROOT, "target", "unwatched")


def build(target_dir, rustflags):
    env = dict(os.environ)
    env["CARGO_TARGET_DIR"] = target_dir
    env.pop("RUSTFLAGS", None)
    if rustflags:
        env["RUSTFLAGS"] = rustflags
    subprocess.run(
        ["cargo", "build", "--release", "-p", "tickless-benches", "--bin", "compare"],
        cwd=ROOT,
        check=True,
        env=env,
    )
    return os.path.join(target_dir, "release", "compare")


def per_round_trip(compare):
    short, long = (
        instructions([compare, "__child", "smoke", "pingpong_same", "tickless", f"rtts={n}"])
        for n in RTTS
    )
    return (long - short) / (RTTS[1] - RTTS[0])


def main():
    watched = build(os.path.join(ROOT, "target"), None)
    unwatched = build(UNWATCHED_DIR, "--cfg tickless_unwatched")
    on = per_round_trip(watched)
    off = per_round_trip(unwatched)
    share = (on - off) / off
    print(
        f"rtt_instr={on:.1f} rtt_instr_unwatched={off:.1f} "
        f"observers={on - off:.1f} share={share:.2%}",
        flush=True,
    )
    if "--no-readme" in sys.argv:
        return
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    lines = [
        "<!-- observer-cost:begin -->",
        f"Measured {datetime.date.today().isoformat()} on {cpu_model()}, {rustc}, by "
        "`python3 benches/scripts/observer_cost.py` (callgrind instruction counts of a "
        "same-core round trip, two run lengths subtracted; the same binary built without the "
        "observers, `--cfg tickless_unwatched`):",
        "",
        "| build | round trip | the observers' share |",
        "|---|---:|---:|",
        f"| default (stall detector and metrics on) | {on:,.1f} | **{share:.2%}** |",
        f"| without the observers | {off:,.1f} | |",
        "<!-- observer-cost:end -->",
    ]
    replace_block("observer-cost", lines)


if __name__ == "__main__":
    main()
