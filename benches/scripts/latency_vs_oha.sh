#!/usr/bin/env bash
# The open-loop generator (`loadgen`, benches/src/load/) against a tool nobody here wrote: oha
# (crates.io), which with `-q RATE --latency-correction` also times each request from when it
# should have been sent. Both load the same server, the HTTP hello service through
# `tickless_http` on one core pinned to CPU 0, at the same rate, over 64 connections, from
# CPU 1, alternating over the rounds; the script prints each run's p50 / p99 / p99.9 side by
# side, in µs: `loadgen-p` (Poisson arrivals, as the latency workload), `loadgen-u` (evenly
# spaced, as oha's) and `oha`.
#
#   benches/scripts/latency_vs_oha.sh [--rate 10000] [--duration 5] [--rounds 2]
#                                     [--runtime tickless|tokio]
#
# Installs oha with `cargo install oha --locked` if it is missing (a few minutes; it builds in
# its own target dir, $OHA_TARGET_DIR or /tmp/oha-target). Bounded: rounds x 2 x (duration + 1 s)
# of load at the given rate, 64 sockets, all on 127.0.0.1.
#
# Where they differ, and why (what to expect in the figures):
# - Schedule: loadgen sends on a Poisson schedule (bursts and lulls, as independent users),
#   oha's `-q` on an evenly spaced one. At the same mean rate Poisson arrivals queue more:
#   loadgen's p99 is expected to be higher at high load, and about the same at low load.
# - Connections: loadgen gives request i to connection i mod 64 and waits on that connection if
#   it is busy (no pipelining; the wait counts). oha's workers take the next due request on
#   whichever connection is free, so a slow connection holds up fewer requests.
# - Warm-up: loadgen records after 1 s of the same load (connections open, server warm);
#   oha records from its first request, connection setup included: its max and p99.9 may hold
#   the connects at the start.
# - Latency correction: oha subtracts its own scheduled start from the end of each request,
#   as loadgen does; both therefore charge a server stall to every request it delayed. A
#   difference at p50 of a few µs to tens of µs is the clients' own cost (oha: tokio and hyper;
#   loadgen: one epoll thread and a minimal parser).
set -euo pipefail
cd "$(dirname "$0")/../.."

rate=10000
duration=5
rounds=2
runtime=tickless
while [ $# -gt 0 ]; do
    case "$1" in
        --rate) rate=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --runtime) runtime=$2; shift 2 ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
done

if ! command -v oha >/dev/null 2>&1; then
    echo "# oha is missing: cargo install oha --locked (a few minutes)" >&2
    CARGO_TARGET_DIR=${OHA_TARGET_DIR:-/tmp/oha-target} cargo install oha --locked >&2
fi
echo "# building loadgen (release)" >&2
cargo build --release -q -p tickless-benches --bin loadgen
bin=${CARGO_TARGET_DIR:-target}/release/loadgen

work=$(mktemp -d)
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# The server exits when its standard input closes: it reads from a fifo held open here.
mkfifo "$work/in"
taskset -c 0 "$bin" serve http_hello "$runtime" cores=1 <"$work/in" >"$work/out" &
server_pid=$!
exec 3>"$work/in"
for _ in $(seq 100); do
    grep -q '^listening=' "$work/out" 2>/dev/null && break
    sleep 0.1
done
addr=$(sed -n 's/^listening=//p' "$work/out")
[ -n "$addr" ] || { echo "the server did not start" >&2; exit 1; }
url="http://$addr/"
echo "# server: http_hello on $runtime, 1 core on CPU 0, $url; clients on CPU 1, $rate requests/s, 64 connections, ${duration} s per run"

printf '%-9s %5s %10s %10s %10s %10s %12s\n' tool round p50_us p99_us p999_us max_us achieved_rps
for round in $(seq "$rounds"); do
    # loadgen twice: its own Poisson schedule, and evenly spaced as oha's, to tell the
    # schedule's share of a difference from the rest.
    for arrivals in poisson uniform; do
        taskset -c 1 "$bin" --url "$url" --rate "$rate" --duration "${duration}s" --warmup 1s \
            --conns 64 --arrivals "$arrivals" >"$work/loadgen"
        python3 - "$work/loadgen" "$round" "loadgen-${arrivals:0:1}" <<'PY'
import sys
f = dict(kv.split("=", 1) for kv in open(sys.argv[1]).read().split() if "=" in kv)
print("%-9s %5s %10s %10s %10s %10s %12s" % (sys.argv[3], sys.argv[2], f["p50_us"],
      f["p99_us"], f["p999_us"], f["max_us"], f["achieved_rps"]))
PY
    done
    taskset -c 1 oha -q "$rate" -z "${duration}s" -c 64 --latency-correction --no-tui \
        --output-format json "$url" >"$work/oha.json"
    python3 - "$work/oha.json" "$round" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["latencyPercentiles"]
us = lambda s: "%.1f" % (s * 1e6) if s is not None else "nan"
print("%-9s %5s %10s %10s %10s %10s %12.0f" % ("oha", sys.argv[2], us(p["p50"]), us(p["p99"]),
      us(p["p99.9"]), us(d["summary"]["slowest"]), d["summary"]["requestsPerSec"]))
PY
done
