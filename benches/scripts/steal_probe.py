#!/usr/bin/env python3
"""When does the host take this virtual machine's CPUs? Busy loops of a set duty cycle, pinned,
against the `steal` the guest kernel counts per CPU (/proc/stat, 10 ms ticks).

    python3 benches/scripts/steal_probe.py [--seconds 30] [--rounds 2]

Each round runs, in turn, for `--seconds` each:

- `alone`:      CPU 0 busy all the time, CPU 1 idle;
- `both`:       CPU 0 and CPU 1 busy all the time;
- `both_75`:    CPU 1 busy all the time, CPU 0 busy 3 ms of every 4 (sleeping the rest);

and prints the steal ticks each CPU gained. `both` is what a tail_probe run with the idle
governor on looks like to the host (the server's core spinning on CPU 0, the generator polling
on CPU 1); `both_75` what it looks like with a server that parks when idle at 75% load.
Bounded: 3 x rounds x seconds of busy loops, nothing else.
"""
import argparse
import subprocess
import sys
import time

LOOP = """
import sys, time
duty, end = float(sys.argv[1]), time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.004 * duty:
        pass
    if duty < 1:
        time.sleep(0.004 * (1 - duty))
"""


def steal():
    """Steal ticks so far of CPU 0 and CPU 1."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            parts = line.split()
            if parts[0] in ("cpu0", "cpu1"):
                out[parts[0]] = int(parts[8])
    return out.get("cpu0", 0), out.get("cpu1", 0)


def busy(cpu, duty, seconds):
    return subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", LOOP, str(duty),
                             str(seconds)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    settings = {"alone": [(0, 1.0)], "both": [(0, 1.0), (1, 1.0)],
                "both_75": [(0, 0.75), (1, 1.0)]}
    total = {k: [0, 0] for k in settings}
    for r in range(a.rounds):
        for name, loops in settings.items():
            before = steal()
            procs = [busy(cpu, duty, a.seconds) for cpu, duty in loops]
            for p in procs:
                p.wait()
            after = steal()
            d = [x - y for x, y in zip(after, before)]
            total[name] = [x + y for x, y in zip(total[name], d)]
            print(f"round={r} setting={name} seconds={a.seconds:.0f} "
                  f"steal_ticks_cpu0={d[0]} steal_ticks_cpu1={d[1]}", flush=True)
            time.sleep(1)
    for name, (c0, c1) in total.items():
        print(f"total setting={name} rounds={a.rounds} steal_ms_cpu0={c0 * 10} "
              f"steal_ms_cpu1={c1 * 10}")


if __name__ == "__main__":
    main()
