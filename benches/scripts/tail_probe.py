#!/usr/bin/env python3
"""Where the dedicated-CPU tail comes from: one point of the latency workload, many runs.

    python3 benches/scripts/tail_probe.py [--shape http_hello|kv_tokio_shape] [--rate 85000]
        [--runs 8] [--duration 2] [--runtimes tickless,tokio] [--trace [sched]] [--shared]
        [--closed] [--threads] [--server-cpu 0] [--gen-cpu 1] [--summarize FILE [--pool]]

Starts each runtime's server (`loadgen serve <shape> <runtime> cores=1 cpu=0`: one core or
worker, pinned to CPU 0; `--server-cpu`) once, then loads them in turn, `--runs` times each,
from CPU 1 (`taskset -c 1 loadgen --rate R`, open loop, Poisson arrivals, 64 connections;
`--gen-cpu`). For each run it prints the generator's percentiles beside what the kernel says
about the server's threads over the run: `waited_ms` (schedstat run_delay: runnable, not
running), `ran_ms` (on a CPU), `invol` (involuntary context switches: preempted) and `vol`
(voluntary: parked), so a run's tail can be told apart as the server's own (ran, not waited) or
the machine's (waited).
With `--trace`, every run is also recorded by perf (the epoll system calls' tracepoints and
`sched_switch`, both CPUs) and the script prints, for the server's loop thread: the I/O poll
spacing (from the return of one `epoll_wait` / `epoll_pwait` / `epoll_pwait2` to the next call:
how long readiness that arrives meanwhile waits at most before the loop can see it), the
events a poll returned, and every stretch over 500 us the thread spent runnable but off its
CPU, with what ran instead; and the same stretches of the generator's thread on CPU 1.

Each traced run's slow requests are then lined up with the trace (`--trace` or `--trace
sched`): the generator writes, per millisecond of scheduled send time, the worst latency, how
long it held a request back itself, and how many requests waited over 1 ms (`loadgen
--timeline`, on perf's `-k mono` clock). A run of milliseconds whose worst request waited over
1 ms is an episode; each is put down to the first of: the server's loop thread runnable off
its CPU (`server`), the generator's (`generator`), both, a running task's CPU taken from under
it with no switch in the guest (`stolen`: cpu-clock samples, every 100 us of a CPU's time,
missing for over 0.15 ms, 0.3 ms of it in the episode), the generator holding a ready request back over 0.3 ms (`held`), a
ksoftirqd (the kernel's deferred packet work) woken and kept waiting over 0.3 ms
(`softirq`), or none of these (`neither`: both threads on their CPUs, running, and still slow;
the machine's CPU slower, or a wait this trace does not see). Per run the milliseconds of each
kind are summed, and per runtime at the end (`episodes runtime=`).

A tickless runtime with `loop_histograms` in its settings (`tickless:loop_histograms`) also
prints, per run, the core's own loop histograms over the run (`Builder::
enable_metrics_loop_histograms`: I/O poll spacing, I/O batch drain, tasks between I/O polls),
each percentile as the upper bound of its bucket.

Bounded: runtimes x runs x (duration + 0.5 s) of load, loopback only.
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOADGEN = os.path.join(ROOT, "target", "release", "loadgen")


def threads(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ran, waited, _ = (int(x) for x in f.read().split())
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                st = f.read()
            vol = int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", st, re.M).group(1))
            invol = int(re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", st, re.M).group(1))
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            out[tid] = (name, ran, waited, vol, invol)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def faults(pid):
    """The process's minor and major page faults so far (/proc/PID/stat fields 10 and 12)."""
    with open(f"/proc/{pid}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    return int(st[7]), int(st[9])


def delta(before, after):
    tot = [0, 0, 0, 0]
    per = {}
    for tid, (name, *a) in after.items():
        b = before.get(tid, (name, 0, 0, 0, 0))[1:]
        d = [x - y for x, y in zip(a, b)]
        per[f"{name}/{tid}"] = d
        tot = [x + y for x, y in zip(tot, d)]
    return tot, per


def steal():
    """Per CPU, the time the hypervisor ran something else while the CPU had work (ms; the
    kernel counts it in ticks of 10 ms)."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            m = re.match(r"cpu(\d+) (.*)", line)
            if m:
                out[int(m.group(1))] = int(m.group(2).split()[7]) * 10
    return out


# The dedicated placement's CPUs: the server's one core or worker, and the generator
# (`--server-cpu`, `--gen-cpu`).
CPUS = {"server": 0, "generator": 1}

EVENTS = ",".join(f"syscalls:sys_{d}_{c}" for c in ("epoll_wait", "epoll_pwait", "epoll_pwait2")
                  for d in ("enter", "exit")) + ",sched:sched_switch,sched:sched_wakeup"
SCHED = "sched:sched_switch,sched:sched_wakeup"
# A sample every 100 us of each CPU's time: a task sampled twice with nothing switched between and
# a longer gap lost its CPU to something the guest kernel does not schedule (the hypervisor
# running another vCPU, or interrupts held off).
CLOCK = ["-e", "cpu-clock", "-c", "100000"]


def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def trace_report(data, server_pid, gen_pid, timeline=None):
    """The loop thread's I/O poll spacing and every long off-CPU stretch, from a perf record."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,tid,cpu,time,event,trace"],
                         capture_output=True, text=True).stdout
    line_re = re.compile(r"\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)")
    polls = {}       # tid -> [(enter, exit, ret)]
    entered = {}
    off = []         # (tid, comm, start, end, what ran)
    switched_out = {}  # tid -> (time, cpu, comm)
    ran_instead = {}   # cpu -> [(comm, start)] while a watched thread waits
    process = {}     # tid -> pid, from every event's current task
    switches = {}    # server tid -> times switched out (the loop thread's is the most)
    sampled = {}     # cpu -> (time, tid) of its last cpu-clock sample since a switch
    stolen = []      # (cpu, start, length, comm): a running task's CPU taken from under it
    woken = {}       # ksoftirqd pid -> (woken at, comm), until it runs
    softirq = []     # (comm, woken at, wait): a ksoftirqd (deferred packet work) kept waiting
    for line in out.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        comm, pid, tid, cpu, t, ev, rest = m.groups()
        pid, tid, cpu, t = int(pid), int(tid), int(cpu), float(t)
        process[tid] = pid
        if ev == "cpu-clock":
            last = sampled.get(cpu)
            if last and last[1] == tid != 0 and t - last[0] > 150e-6:
                stolen.append((cpu, last[0], t - last[0], comm))
            sampled[cpu] = (t, tid)
            continue
        if ev.startswith("syscalls:sys_enter_epoll") and pid == server_pid:
            entered[tid] = t
        elif ev.startswith("syscalls:sys_exit_epoll") and pid == server_pid and tid in entered:
            ret = int(rest.split("0x")[-1], 16) if "0x" in rest else 0
            polls.setdefault(tid, []).append((entered.pop(tid), t, ret))
        elif ev == "sched:sched_wakeup":
            f = dict(kv.split("=", 1) for kv in rest.split() if "=" in kv)
            if f.get("comm", "").startswith("ksoftirqd"):
                woken[int(f["pid"])] = (t, f["comm"])
        elif ev == "sched:sched_switch":
            sampled.pop(cpu, None)
            if pid == server_pid:
                switches[tid] = switches.get(tid, 0) + 1
            f = dict(kv.split("=", 1) for kv in rest.replace(" ==> ", " ").split() if "=" in kv)
            prev, nxt = int(f["prev_pid"]), int(f["next_pid"])
            if nxt in woken:
                t0, name = woken.pop(nxt)
                if t - t0 > 100e-6:
                    softirq.append((name, t0, t - t0))
            if f["prev_state"].startswith("R") and prev != 0:
                switched_out[prev] = (t, cpu, f["prev_comm"])
            for w in list(switched_out):
                if switched_out[w][1] == cpu and w != nxt:
                    ran_instead.setdefault(w, []).append(f"{f['next_comm']}/{nxt}")
            if nxt in switched_out:
                t0, c, name = switched_out.pop(nxt)
                if t - t0 > 100e-6 and process.get(nxt) in (server_pid, gen_pid):
                    who = sorted(set(ran_instead.get(nxt, [])) - {"swapper/0/0", "swapper/1/0"})
                    role = "server" if process[nxt] == server_pid else "generator"
                    off.append((f"{role} {name}", nxt, t0, t - t0, who, c))
                ran_instead.pop(nxt, None)
    short = off
    off = [o for o in off if o[3] > 500e-6]
    slow = None
    if timeline:
        loop = max(polls or switches, key=lambda k: len((polls or {}).get(k, ())) or switches[k])
        slow = episodes(timeline, [o for o in short if o[0].startswith("generator") or o[1] == loop],
                 polls.get(loop), stolen, softirq)
    print(f"#   trace: CPU taken from a running task for over 0.15 ms (the hypervisor or "
          f"interrupts): " + ", ".join(
              f"CPU {c} {sum(x[2] for x in stolen if x[0] == c) * 1e3:.1f} ms in "
              f"{sum(1 for x in stolen if x[0] == c)}" for c in (0, 1)))
    print(f"#   trace: ksoftirqd woken and kept waiting over 0.1 ms: " + ", ".join(
        f"{n} {sum(x[2] for x in softirq if x[0] == n) * 1e3:.1f} ms in "
        f"{sum(1 for x in softirq if x[0] == n)} (longest "
        f"{max((x[2] for x in softirq if x[0] == n), default=0) * 1e3:.2f} ms)"
        for n in ("ksoftirqd/0", "ksoftirqd/1")))
    return slow
    long_off = [o for o in off if o[0].startswith("server")]
    print(f"#   trace: server runnable off its CPU over 0.5 ms: {len(long_off)} times, "
          f"{sum(o[3] for o in long_off) * 1e3:.1f} ms in all, longest "
          f"{max((o[3] for o in long_off), default=0) * 1e3:.2f} ms")
    if not polls:
        for name, t, t0, d, who, c in sorted(off, key=lambda x: x[2]):
            print(f"#   off-CPU runnable: {name}/{t} on CPU {c} for {d * 1e3:.2f} ms "
                  f"(ran: {', '.join(who) or 'nothing traced'})")
        return
    tid = max(polls, key=lambda k: len(polls[k]))
    ps = polls[tid]
    gaps = sorted((b[0] - a[1]) * 1e6 for a, b in zip(ps, ps[1:]))
    blocked = sorted((x[1] - x[0]) * 1e6 for x in ps)
    events = sorted(x[2] for x in ps)
    span = ps[-1][1] - ps[0][0]
    print(f"#   trace: loop thread {tid}: {len(ps)} polls in {span:.2f} s; spacing us "
          f"p50={pct(gaps, .5):.1f} p99={pct(gaps, .99):.1f} p99.9={pct(gaps, .999):.1f} "
          f"max={gaps[-1] if gaps else 0:.0f}; in the poll us p50={pct(blocked, .5):.1f} "
          f"p99={pct(blocked, .99):.1f}; events a poll p50={pct(events, .5)} "
          f"p99={pct(events, .99)} max={events[-1]}")
    for name, t, t0, d, who, c in sorted(off, key=lambda x: x[2]):
        print(f"#   off-CPU runnable: {name}/{t} on CPU {c} at +{t0 - ps[0][0]:.3f} s for "
              f"{d * 1e3:.2f} ms (ran: {', '.join(who) or 'nothing traced'})")


def read_timeline(path):
    """loadgen's --timeline: (the window's start on CLOCK_MONOTONIC, s; worst latency per ms, us)."""
    with open(path) as f:
        start = int(f.readline().split("=")[1]) / 1e9
        rows = [l.split() for l in f if l.strip()]
        return (start, [float(r[1]) for r in rows], [float(r[2]) for r in rows],
                [int(r[3]) for r in rows])


def episodes(timeline, off, polls, stolen, softirq, slow_us=1000.0):
    """Lines the run's slow requests up with the trace. An episode is a run of milliseconds
    whose requests (by scheduled send) waited over `slow_us`; the stall behind it lies between
    the first one's due time and the last answer. Within that span: how long the server's and
    the generator's threads were runnable off their CPU (stretches over 100 us), and the loop's
    longest I/O poll spacing, so each episode reads as the server's scheduling, the
    generator's, or the server's own loop."""
    start, worst, late, slow = timeline
    eps, i = [], 0
    while i < len(worst):
        if worst[i] <= slow_us:
            i += 1
            continue
        j = i
        while j < len(worst) and worst[j] > slow_us:
            j += 1
        lo = start + i * 1e-3
        hi = max(start + (k + 1) * 1e-3 + worst[k] * 1e-6 for k in range(i, j))
        eps.append((i, j - i, max(worst[i:j]), lo, hi, max(late[i:j]), sum(slow[i:j])))
        i = j
    total = {"server": 0.0, "generator": 0.0}
    slow_ms = {"server": 0, "generator": 0, "both": 0, "stolen": 0, "held": 0, "softirq": 0,
               "neither": 0}
    for ms, n, w, lo, hi, held, late_n in eps:
        inside = {"server": 0.0, "generator": 0.0}
        who = set()
        for name, tid, t0, d, ran, cpu in off:
            ov = min(hi, t0 + d) - max(lo, t0)
            if ov > 0:
                inside[name.split()[0]] += ov
                who.update(ran)
        for k in total:
            total[k] += inside[k]
        gap = max(((b[0] - a[1]) for a, b in zip(polls, polls[1:]) if a[1] < hi and b[0] > lo),
                  default=0.0) if polls else 0.0
        took = {cpu: 0.0 for cpu in CPUS.values()}
        for cpu, t0, d, _ in stolen:
            if cpu in took:
                took[cpu] += max(0.0, min(hi, t0 + d) - max(lo, t0))
        deferred = sum(max(0.0, min(hi, t0 + d) - max(lo, t0)) for _, t0, d in softirq)
        waiting = sum(max(0.0, min(hi, b) - max(lo, a)) for a, b, _ in polls or ())
        s_off, g_off = inside["server"] > 100e-6, inside["generator"] > 100e-6
        kind = "both" if s_off and g_off else "server" if s_off else "generator" if g_off \
            else "stolen" if max(took.values()) > 300e-6 else "held" if held > 300 \
            else "softirq" if deferred > 300e-6 else "neither"
        slow_ms[kind] += n
        print(f"#   episode at +{ms} ms: {n} ms of requests over {slow_us:.0f} us ({late_n} "
              f"requests), worst "
              f"{w / 1e3:.2f} ms; server off-CPU {inside['server'] * 1e3:.2f} ms, generator "
              f"{inside['generator'] * 1e3:.2f} ms; CPUs taken {took[CPUS['server']] * 1e3:.2f} / "
              f"{took[CPUS['generator']] * 1e3:.2f} ms; generator held one {held / 1e3:.2f} ms; ksoftirqd "
              f"kept waiting {deferred * 1e3:.2f} ms" +
              (f"; longest poll spacing {gap * 1e3:.2f} ms, in epoll {waiting * 1e3:.2f} ms"
               if polls else "") +
              f" ({kind}; ran: {', '.join(sorted(w for w in who if not w.startswith('swapper/')))[:160] or '-'})")
    print(f"#   episodes: {len(eps)}; slow ms by who was off its CPU: " +
          " ".join(f"{k}={v}" for k, v in slow_ms.items()))
    return slow_ms


def loop_histograms(p):
    """A tickless server's loop histograms so far (`TICKLESS_BENCH_BUILDER=loop_histograms`):
    {name: [count per bucket]}, or None when they are off."""
    p.stdin.write("histograms\n")
    p.stdin.flush()
    line = p.stdout.readline().split()
    if len(line) < 2 or line[1] == "off":
        return None
    return {k: [int(x) for x in v.split(",")] for k, v in (f.split("=") for f in line[1:])}


def core_stats(p):
    """A tickless server's counters so far (CoreStats, summed over its cores), or None."""
    p.stdin.write("stats\n")
    p.stdin.flush()
    line = p.stdout.readline().split()
    if len(line) < 2 or line[1] == "off":
        return None
    return {k: int(v) for k, v in (f.split("=") for f in line[1:])}


# The counters a run line shows for a tickless server (its idle path).
STATS = ("parks", "spins", "governor_spins", "governor_caught", "governor_preempted",
         "governor_busy_looks")


def bucket_top(name, b):
    """Bucket b's upper bound: us for the durations (0-1, 1-2, 2-4, ...), tasks for `tasks`
    (0, 1, 2-3, ...)."""
    if name == "tasks":
        return 0 if b == 0 else 2 ** b - 1
    return 2 ** b


def loop_report(before, after):
    """The loop's own view of one run: each histogram's percentiles, as the upper bound of the
    bucket they fall in."""
    parts = []
    for name in ("spacing", "drain", "tasks"):
        d = [x - y for x, y in zip(after[name], before[name])]
        n = sum(d)
        if not n:
            parts.append(f"{name}: none")
            continue
        qs = []
        for q in (0.5, 0.99, 0.999):
            acc = 0
            for b, c in enumerate(d):
                acc += c
                if acc >= q * n:
                    qs.append(bucket_top(name, b))
                    break
        top = max(b for b, c in enumerate(d) if c)
        unit = "" if name == "tasks" else " us"
        parts.append(f"{name} n={n} p50<={qs[0]} p99<={qs[1]} p99.9<={qs[2]} "
                     f"max<={bucket_top(name, top)}{unit}")
    print("#   loop (the core's own histograms): " + "; ".join(parts))


def fields(line):
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


def ratio_ci(rs, base, key, draws=4000):
    """A 90% bootstrap interval of median(rs) / median(base) for `key`: the runs of each side
    resampled with replacement, the 5th and 95th percentiles of the ratio (a fixed seed, so a
    summary of the same runs prints the same interval). An interval that holds 1 says the runs
    cannot rank the two."""
    import random
    rng = random.Random(1)
    a = [float(r[key]) for r in rs]
    b = [float(r[key]) for r in base]
    ratios = sorted(statistics.median(rng.choices(a, k=len(a))) /
                    statistics.median(rng.choices(b, k=len(b))) for _ in range(draws))
    return f"{ratios[int(0.05 * draws)]:.2f}-{ratios[int(0.95 * draws)]:.2f}"


def summary(rows):
    """Per runtime, the median over runs of each figure, and each run's p99 in order."""
    by = {}
    for r in rows:
        by.setdefault(r["runtime"], []).append(r)
    med = lambda rs, k: statistics.median(float(r[k]) for r in rs)
    base = by.get("tokio")
    for rt, rs in by.items():
        ratio = (f" p99_vs_tokio={med(rs, 'p99_us') / med(base, 'p99_us'):.2f}"
                 f" p99_ratio_ci90={ratio_ci(rs, base, 'p99_us')}"
                 f" p999_vs_tokio={med(rs, 'p999_us') / med(base, 'p999_us'):.2f}"
                 f" p999_ratio_ci90={ratio_ci(rs, base, 'p999_us')}"
                 f" p50_vs_tokio={med(rs, 'p50_us') / med(base, 'p50_us'):.2f}"
                 f" rps_vs_tokio={med(rs, 'achieved_rps') / med(base, 'achieved_rps'):.2f}"
                 if base else "")
        print(f"summary runtime={rt} runs={len(rs)} " + " ".join(
            f"{k}={med(rs, k):.1f}" for k in ("achieved_rps", "p50_us", "p99_us", "p999_us", "max_us",
                                              "ran_ms", "waited_ms", "vol", "invol")) + ratio +
              f" steal_ms_total={sum(int(r['steal_ms'].split('/')[0]) for r in rs)}"
              f"/{sum(int(r['steal_ms'].split('/')[-1]) for r in rs)}" +
              " p99_runs=" + ",".join(f"{float(r['p99_us']):.0f}" for r in
                                     sorted(rs, key=lambda r: float(r["p99_us"]))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="http_hello")
    ap.add_argument("--rate", type=float, default=85000)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--runtimes", default="tickless,tokio",
                    help="a list of tokio, tickless and tickless:SETTINGS, SETTINGS joined by + "
                         "(TICKLESS_BENCH_BUILDER's: governor=off, stall=off, ...; and cores=N, for any "
                         "runtime: its core or worker count instead of the placement's)")
    ap.add_argument("--shared", action="store_true",
                    help="server (a core or worker per CPU) and generator not pinned")
    ap.add_argument("--closed", action="store_true", help="the closed-loop maximum instead")
    ap.add_argument("--server-cpu", type=int, default=0,
                    help="dedicated placement: the server's CPU (on a machine of more CPUs, pick "
                         "two that share no physical core or cache: `lscpu -e`)")
    ap.add_argument("--gen-cpu", type=int, default=1,
                    help="dedicated placement: the generator's CPU")
    ap.add_argument("--trace", nargs="?", const="all", choices=["all", "sched"],
                    help="record with perf: the epoll calls and sched_switch (all), or only "
                         "sched_switch (sched: fewer events, less of perf on the CPUs)")
    ap.add_argument("--threads", action="store_true", help="per-thread deltas")
    ap.add_argument("--label", help="a name for the build or experiment, written in the batch's "
                    "header: --pool keeps batches of different labels apart (none: -)")
    ap.add_argument("--gen-spin-us", type=int, default=50,
                    help="how long before a send the generator stops sleeping and polls "
                         "(loadgen's --spin-us); at 50 and a rate over 20k/s it never sleeps, "
                         "its CPU busy all the time")
    ap.add_argument("--summarize", metavar="FILE", help="print the summary of an earlier output")
    ap.add_argument("--pool", action="store_true",
                    help="with --summarize: one summary per shape, rate and placement over "
                         "every untraced batch of the file")
    a = ap.parse_args()
    if a.summarize and a.pool:
        # Every untraced batch of one shape, rate and placement, their runs together (each
        # batch's runtimes took turns, so a machine's bad spell fell on them alike).
        pooled = {}
        with open(a.summarize) as f:
            for block in f.read().split("# tail_probe ")[1:]:
                head = fields(block.splitlines()[0])
                if "#   trace:" in block:
                    continue
                key = (head["shape"], head["rate"], head.get("cpus", "dedicated"),
                       head.get("gen_spin_us", "50"), head.get("label", "-"))
                batch = pooled.setdefault(key, [0, []])
                batch[0] += 1
                batch[1] += [fields(l) for l in block.splitlines() if l.startswith("run=")]
        for (shape, rate, cpus, spin, label), (n, rows) in pooled.items():
            print(f"# pooled shape={shape} rate={rate} cpus={cpus} gen_spin_us={spin} "
                  f"label={label} batches={n} (untraced)")
            summary(rows)
        return
    if a.summarize:
        with open(a.summarize) as f:
            for block in f.read().split("# tail_probe ")[1:]:
                print("# " + block.splitlines()[0])
                summary([fields(l) for l in block.splitlines() if l.startswith("run=")])
                # Each run's episode line follows its run line.
                slow_by, rt, runs = {}, None, {}
                for l in block.splitlines():
                    if l.startswith("run="):
                        rt = fields(l)["runtime"]
                        runs[rt] = runs.get(rt, 0) + 1
                    elif l.startswith("#   episodes:") and rt:
                        for k, v in fields(l.split(":", 2)[2]).items():
                            slow_by.setdefault(rt, {})[k] = slow_by.get(rt, {}).get(k, 0) + int(v)
                for rt, slow in slow_by.items():
                    print(f"episodes runtime={rt} runs={runs[rt]} slow_ms_by_cause " +
                          " ".join(f"{k}={v}" for k, v in slow.items()))
        return
    rows, slow_by = [], {}
    if not os.path.exists(LOADGEN):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "tickless-benches", "--bin",
                        "loadgen"], cwd=ROOT, check=True)
    servers = {}
    for rt in a.runtimes.split(","):
        runtime, _, settings = rt.partition(":")
        # `cores=N` is the server's core (or worker) count, not a builder setting.
        cores = [s for s in settings.split("+") if s.startswith("cores=")]
        settings = "+".join(s for s in settings.split("+") if not s.startswith("cores="))
        env = dict(os.environ, TICKLESS_BENCH_BUILDER=settings.replace("+", ","))
        place = [f"cores={os.cpu_count()}"] if a.shared else ["cores=1", f"cpu={a.server_cpu}"]
        if cores:
            place[0] = cores[-1]
        p = subprocess.Popen([LOADGEN, "serve", a.shape, runtime] + place, env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline().strip()
        if not line.startswith("listening="):
            sys.exit(f"{rt}: server said {line!r}")
        servers[rt] = (p, line.split("=", 1)[1])
    time.sleep(0.5)
    CPUS.update(server=a.server_cpu, generator=a.gen_cpu)
    # The steal of the server's and the generator's CPUs (every CPU, shared); the placement
    # names the CPUs where they are not the first two, so that --pool keeps those batches apart.
    watched = sorted(steal()) if a.shared else [a.server_cpu, a.gen_cpu]
    placement = "shared" if a.shared else "dedicated" + (
        "" if (a.server_cpu, a.gen_cpu) == (0, 1) else f":{a.server_cpu}/{a.gen_cpu}")
    print(f"# tail_probe shape={a.shape} rate={'closed' if a.closed else f'{a.rate:.0f}'} "
          f"cpus={placement} runs={a.runs} duration={a.duration}s"
          + ("" if a.gen_spin_us == 50 else f" gen_spin_us={a.gen_spin_us}")
          + (f" label={a.label}" if a.label else ""))
    try:
        for run in range(a.runs):
            order = list(servers)
            order = order[run % len(order):] + order[:run % len(order)]
            for rt in order:
                p, addr = servers[rt]
                cmd = ([] if a.shared else ["taskset", "-c", str(a.gen_cpu)]) + [
                    LOADGEN, "--url", f"http://{addr}/", "--duration", f"{a.duration}s",
                    "--warmup", "0.5s", "--spin-us", str(a.gen_spin_us)] + (
                    ["--closed"] if a.closed else ["--rate", str(a.rate)])
                if a.shape.startswith("kv"):
                    cmd.append("--kv")
                rec = None
                tl = f"/tmp/tail_probe-{os.getpid()}.timeline"
                if not a.closed:
                    cmd += ["--timeline", tl]
                if a.trace:
                    data = f"/tmp/tail_probe-{os.getpid()}.data"
                    rec = subprocess.Popen(["perf", "record", "-q", "-a", "-k", "mono", "-m",
                                            "4096", "-e",
                                            EVENTS if a.trace == "all" else SCHED] +
                                           CLOCK + [
                                            "-o", data],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    time.sleep(0.5)
                hist = loop_histograms(p) if "loop_histograms" in rt else None
                counted = core_stats(p) if rt.startswith("tickless") else None
                before, stolen, flt = threads(p.pid), steal(), faults(p.pid)
                t0, kids = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
                gen = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
                out = gen.communicate()[0]
                if gen.returncode:
                    sys.exit(f"loadgen failed: {gen.returncode}")
                wall = time.monotonic() - t0
                # The generator's CPU (the only child waited for meanwhile), warm-up included.
                k = resource.getrusage(resource.RUSAGE_CHILDREN)
                gen_ms = (k.ru_utime + k.ru_stime - kids.ru_utime - kids.ru_stime) * 1e3
                after, stolen = threads(p.pid), {c: v - stolen[c] for c, v in steal().items()}
                flt = [x - y for x, y in zip(faults(p.pid), flt)]
                if rec:
                    rec.send_signal(2)
                    rec.wait()
                r = fields(out.strip().splitlines()[-1])
                (ran, waited, vol, invol), per = delta(before, after)
                idle = "".join(f"{k}={v - counted.get(k, 0)} " for k, v in
                               core_stats(p).items() if k in STATS) if counted else ""
                line = (f"run={run} runtime={rt} p50_us={r['p50_us']} p99_us={r['p99_us']} "
                        f"p999_us={r['p999_us']} max_us={r['max_us']} "
                        f"achieved_rps={r['achieved_rps']} ran_ms={ran / 1e6:.0f} "
                        f"waited_ms={waited / 1e6:.2f} invol={invol} vol={vol} "
                        f"minflt={flt[0]} majflt={flt[1]} gen_cpu_ms={gen_ms:.0f} {idle}"
                        f"steal_ms={'/'.join(str(stolen[c]) for c in watched)} "
                        f"wall_s={wall:.2f}")
                print(line, flush=True)
                rows.append(fields(line))
                if hist:
                    loop_report(hist, loop_histograms(p))
                if rec:
                    slow = trace_report(data, p.pid, gen.pid,
                                        None if a.closed else read_timeline(tl))
                    for k, v in (slow or {}).items():
                        slow_by[rt][k] = slow_by.setdefault(rt, {}).get(k, 0) + v
                    os.environ.get("KEEP") or os.unlink(data)
                if a.threads:
                    for name, (tr, tw, tv, ti) in sorted(per.items()):
                        if tr or tw:
                            print(f"#   {name}: ran_ms={tr / 1e6:.1f} waited_ms={tw / 1e6:.2f} "
                                  f"vol={tv} invol={ti}")
        summary(rows)
        for rt, slow in slow_by.items():
            print(f"episodes runtime={rt} runs={a.runs} slow_ms_by_cause " +
                  " ".join(f"{k}={v}" for k, v in slow.items()))
    finally:
        for p, _ in servers.values():
            p.stdin.close()
            p.wait()


if __name__ == "__main__":
    main()
