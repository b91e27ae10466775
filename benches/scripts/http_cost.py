#!/usr/bin/env python3
"""Instructions an HTTP request costs the core that serves it, with and without the stall
detector, counted by callgrind: what the detector costs the HTTP hot path, free of the machine's
noise (a timed A/B on a shared 2-CPU machine cannot resolve 1%).

    python3 benches/scripts/http_cost.py [--requests N] [--rounds R]

Method: `hello_http --cores 1` (the hyper "Hello, world!" server of tickless-http's examples,
one core, the detector on by default) under `valgrind --tool=callgrind --separate-threads=yes`,
loaded by curl with N and then 3N sequential GETs on one keep-alive connection; the core's
thread's instructions at 3N less those at N, over 2N, are a request's (setup and shutdown
cancel out); each of the four runs R times (3), taking turns, and the medians are used. Then
the same with `--no-stall` (`Builder::stall_threshold(None)`). The watchdog's
own thread is counted apart: under callgrind the run is some 50 times slower than it is, so its
checks (every half threshold while a core runs) would be 50 times too many per request.

Prints `http_cost detector=<on|off> instr_per_req=...` lines and the ratio; touches no README.
"""
import glob
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    n = 2000
    if "--requests" in sys.argv:
        n = int(sys.argv[sys.argv.index("--requests") + 1])
    rounds = 3
    if "--rounds" in sys.argv:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1])
    for tool in ("valgrind", "curl"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "tickless-http", "--example",
                    "hello_http"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    binary = os.path.join(target, "release", "examples", "hello_http")
    modes = (("on", []), ("off", ["--no-stall"]))
    runs = {(label, k): [] for label, _ in modes for k in (1, 3)}
    # The modes and lengths take turns, so that what varies between runs (how often the core
    # parks: the idle governor learns from wall-clock time, which callgrind stretches) falls on
    # both alike; each figure is a median.
    for r in range(rounds):
        for label, flags in modes:
            for k in (1, 3):
                instr, parks = core_instructions(binary, flags, k * n)
                runs[(label, k)].append(instr)
                print(f"run={r + 1} detector={label} requests={k * n} core_instr={instr} "
                      f"parks={parks}", flush=True)
    results = {}
    for label, _ in modes:
        per_req = (statistics.median(runs[(label, 3)]) - statistics.median(runs[(label, 1)])) \
            / (2 * n)
        results[label] = per_req
        print(f"http_cost detector={label} instr_per_req={per_req:.1f} "
              f"requests={n},{3 * n} rounds={rounds}", flush=True)
    on, off = results["on"], results["off"]
    print(f"ratio detector on/off={on / off:.4f} ({(on / off - 1) * 100:+.2f}%)")


def core_instructions(binary, flags, requests):
    """The instructions the core's thread (the main thread: core 0 runs in `block_on`) ran
    while serving `requests` requests, from start to a graceful exit, and the parks the
    server reported at its exit."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.%p")
        err_path = os.path.join(tmp, "stderr")
        with open(err_path, "w") as err:
            server = subprocess.Popen(
                ["valgrind", "--tool=callgrind", "--separate-threads=yes",
                 f"--callgrind-out-file={out}", binary, "0", "--cores", "1", *flags],
                stdout=subprocess.PIPE, stderr=err, text=True)
            url = None
            for line in server.stdout:
                m = re.search(r"http://[0-9.:]+", line)
                if m:
                    url = m.group(0)
                    break
            if url is None:
                sys.exit("hello_http did not start")
            subprocess.run(["curl", "-s", "--http1.1", f"{url}/?[1-{requests}]"],
                           stdout=subprocess.DEVNULL, check=True)
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=600)
        time.sleep(0.2)
        with open(err_path) as f:
            m = re.search(r"(\d+) parks", f.read())
        parks = int(m.group(1)) if m else -1
        files = sorted(glob.glob(os.path.join(tmp, "cg.*-01")))
        if not files:
            sys.exit("callgrind wrote no file for the main thread")
        with open(files[0]) as f:
            for line in f:
                if line.startswith("totals:") or line.startswith("summary:"):
                    return int(line.split()[1]), parks
        sys.exit("no totals in the callgrind output")


if __name__ == "__main__":
    main()
