#!/usr/bin/env python3
"""Where the dedicated-CPU tail comes from: one point of the latency workload, many runs.

    python3 benches/scripts/tail_probe.py [--shape http_hello|kv_tokio_shape] [--rate 85000]
        [--runs 8] [--duration 2] [--runtimes tickless,tokio] [--perf-sched DIR]

Starts each runtime's server (`loadgen serve <shape> <runtime> cores=1 cpu=0`: one core or
worker, pinned to CPU 0) once, then loads them in turn, `--runs` times each, from CPU 1
(`taskset -c 1 loadgen --rate R`, open loop, Poisson arrivals, 64 connections). For each run it
prints the generator's percentiles beside what the kernel says about the server's threads over
the run: `waited_ms` (schedstat run_delay: runnable, not running), `ran_ms` (on a CPU),
`invol` (involuntary context switches: preempted) and `vol` (voluntary: parked), so a run's
tail can be told apart as the server's own (ran, not waited) or the machine's (waited).
With `--trace`, every run is also recorded by perf (the epoll system calls' tracepoints and
`sched_switch`, both CPUs) and the script prints, for the server's loop thread: the I/O poll
spacing (from the return of one `epoll_wait` / `epoll_pwait` / `epoll_pwait2` to the next call:
how long readiness that arrives meanwhile waits at most before the loop can see it), the
events a poll returned, and every stretch over 500 us the thread spent runnable but off its
CPU, with what ran instead; and the same stretches of the generator's thread on CPU 1. Bounded: runtimes x runs x (duration + 0.5 s) of load, loopback only.
"""
import argparse
import os
import re
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


EVENTS = ",".join(f"syscalls:sys_{d}_{c}" for c in ("epoll_wait", "epoll_pwait", "epoll_pwait2")
                  for d in ("enter", "exit")) + ",sched:sched_switch"


def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def trace_report(data, server_pid, gen_pid):
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
    for line in out.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        comm, pid, tid, cpu, t, ev, rest = m.groups()
        pid, tid, cpu, t = int(pid), int(tid), int(cpu), float(t)
        process[tid] = pid
        if ev.startswith("syscalls:sys_enter_epoll") and pid == server_pid:
            entered[tid] = t
        elif ev.startswith("syscalls:sys_exit_epoll") and pid == server_pid and tid in entered:
            ret = int(rest.split("0x")[-1], 16) if "0x" in rest else 0
            polls.setdefault(tid, []).append((entered.pop(tid), t, ret))
        elif ev == "sched:sched_switch":
            f = dict(kv.split("=", 1) for kv in rest.replace(" ==> ", " ").split() if "=" in kv)
            prev, nxt = int(f["prev_pid"]), int(f["next_pid"])
            if f["prev_state"].startswith("R") and prev != 0:
                switched_out[prev] = (t, cpu, f["prev_comm"])
            for w in list(switched_out):
                if switched_out[w][1] == cpu and w != nxt:
                    ran_instead.setdefault(w, []).append(f"{f['next_comm']}/{nxt}")
            if nxt in switched_out:
                t0, c, name = switched_out.pop(nxt)
                if t - t0 > 500e-6 and process.get(nxt) in (server_pid, gen_pid):
                    who = sorted(set(ran_instead.get(nxt, [])) - {"swapper/0/0", "swapper/1/0"})
                    role = "server" if process[nxt] == server_pid else "generator"
                    off.append((f"{role} {name}", nxt, t0, t - t0, who, c))
                ran_instead.pop(nxt, None)
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


def fields(line):
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


def summary(rows):
    """Per runtime, the median over runs of each figure, and each run's p99 in order."""
    by = {}
    for r in rows:
        by.setdefault(r["runtime"], []).append(r)
    med = lambda rs, k: statistics.median(float(r[k]) for r in rs)
    base = by.get("tokio")
    for rt, rs in by.items():
        ratio = (f" p99_vs_tokio={med(rs, 'p99_us') / med(base, 'p99_us'):.2f}"
                 f" rps_vs_tokio={med(rs, 'achieved_rps') / med(base, 'achieved_rps'):.2f}"
                 if base else "")
        print(f"summary runtime={rt} runs={len(rs)} " + " ".join(
            f"{k}={med(rs, k):.1f}" for k in ("achieved_rps", "p50_us", "p99_us", "p999_us", "max_us",
                                              "ran_ms", "waited_ms", "vol", "invol")) + ratio +
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
                         "(TICKLESS_BENCH_BUILDER's: governor=off, stall=off, ...)")
    ap.add_argument("--shared", action="store_true",
                    help="server (a core or worker per CPU) and generator not pinned")
    ap.add_argument("--closed", action="store_true", help="the closed-loop maximum instead")
    ap.add_argument("--trace", nargs="?", const="all", choices=["all", "sched"],
                    help="record with perf: the epoll calls and sched_switch (all), or only "
                         "sched_switch (sched: fewer events, less of perf on the CPUs)")
    ap.add_argument("--threads", action="store_true", help="per-thread deltas")
    ap.add_argument("--summarize", metavar="FILE", help="print the summary of an earlier output")
    a = ap.parse_args()
    if a.summarize:
        with open(a.summarize) as f:
            for block in f.read().split("# tail_probe ")[1:]:
                print("# " + block.splitlines()[0])
                summary([fields(l) for l in block.splitlines() if l.startswith("run=")])
        return
    rows = []
    if not os.path.exists(LOADGEN):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "tickless-benches", "--bin",
                        "loadgen"], cwd=ROOT, check=True)
    servers = {}
    for rt in a.runtimes.split(","):
        runtime, _, settings = rt.partition(":")
        env = dict(os.environ, TICKLESS_BENCH_BUILDER=settings.replace("+", ","))
        place = [f"cores={os.cpu_count()}"] if a.shared else ["cores=1", "cpu=0"]
        p = subprocess.Popen([LOADGEN, "serve", a.shape, runtime] + place, env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline().strip()
        if not line.startswith("listening="):
            sys.exit(f"{rt}: server said {line!r}")
        servers[rt] = (p, line.split("=", 1)[1])
    time.sleep(0.5)
    print(f"# tail_probe shape={a.shape} rate={'closed' if a.closed else f'{a.rate:.0f}'} "
          f"cpus={'shared' if a.shared else 'dedicated'} runs={a.runs} duration={a.duration}s")
    try:
        for run in range(a.runs):
            order = list(servers)
            order = order[run % len(order):] + order[:run % len(order)]
            for rt in order:
                p, addr = servers[rt]
                cmd = ([] if a.shared else ["taskset", "-c", "1"]) + [
                    LOADGEN, "--url", f"http://{addr}/", "--duration", f"{a.duration}s",
                    "--warmup", "0.5s"] + (["--closed"] if a.closed else ["--rate", str(a.rate)])
                if a.shape.startswith("kv"):
                    cmd.append("--kv")
                rec = None
                if a.trace:
                    data = f"/tmp/tail_probe-{os.getpid()}.data"
                    rec = subprocess.Popen(["perf", "record", "-q", "-a", "-m", "4096", "-e",
                                            EVENTS if a.trace == "all" else "sched:sched_switch",
                                            "-o", data],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    time.sleep(0.5)
                before, stolen = threads(p.pid), steal()
                t0 = time.monotonic()
                gen = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
                out = gen.communicate()[0]
                if gen.returncode:
                    sys.exit(f"loadgen failed: {gen.returncode}")
                wall = time.monotonic() - t0
                after, stolen = threads(p.pid), {c: v - stolen[c] for c, v in steal().items()}
                if rec:
                    rec.send_signal(2)
                    rec.wait()
                r = fields(out.strip().splitlines()[-1])
                (ran, waited, vol, invol), per = delta(before, after)
                line = (f"run={run} runtime={rt} p50_us={r['p50_us']} p99_us={r['p99_us']} "
                        f"p999_us={r['p999_us']} max_us={r['max_us']} "
                        f"achieved_rps={r['achieved_rps']} ran_ms={ran / 1e6:.0f} "
                        f"waited_ms={waited / 1e6:.2f} invol={invol} vol={vol} "
                        f"steal_ms={'/'.join(str(v) for _, v in sorted(stolen.items()))} "
                        f"wall_s={wall:.2f}")
                print(line, flush=True)
                rows.append(fields(line))
                if rec:
                    trace_report(data, p.pid, gen.pid)
                    os.environ.get("KEEP") or os.unlink(data)
                if a.threads:
                    for name, (tr, tw, tv, ti) in sorted(per.items()):
                        if tr or tw:
                            print(f"#   {name}: ran_ms={tr / 1e6:.1f} waited_ms={tw / 1e6:.2f} "
                                  f"vol={tv} invol={ti}")
        summary(rows)
    finally:
        for p, _ in servers.values():
            p.stdin.close()
            p.wait()


if __name__ == "__main__":
    main()
