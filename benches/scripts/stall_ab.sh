#!/usr/bin/env bash
# The stall detector's cost on HTTP hello, timed: an alternating A/B of `hello_http --cores 1`
# with the detector on (the default) and off (`--no-stall`), as `http_load.sh --split` places
# them: the server pinned to CPU 0, wrk (one thread, 64 connections) to CPU 1, a 1 s warm-up
# on each fresh server process, then the timed run. Prints each run's requests/s and server
# CPU per request (utime + stime from /proc), then per setting the medians and the ratio
# on / off.
#
#   benches/scripts/stall_ab.sh [--rounds 5] [--duration 5s]
#
# Bounded: rounds x 2 x (duration + 1 s) of load, 64 sockets on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=5
duration=5s
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
done
command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 1; }
cargo build --release -q -p tickless-http --example hello_http
bin=${CARGO_TARGET_DIR:-target}/release/examples/hello_http
port=18181
tick=$(getconf CLK_TCK)
out=$(mktemp)
for r in $(seq 1 "$rounds"); do
    order=("on" "off")
    [ $((r % 2)) -eq 0 ] && order=("off" "on")
    for setting in "${order[@]}"; do
        flag=()
        [ "$setting" = off ] && flag=(--no-stall)
        taskset -c 0 "$bin" "$port" --cores 1 "${flag[@]}" >/dev/null 2>&1 &
        pid=$!
        sleep 0.5
        taskset -c 1 wrk -t1 -c64 -d1s "http://127.0.0.1:$port/" >/dev/null
        before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
        reqs=$(taskset -c 1 wrk -t1 -c64 -d"$duration" "http://127.0.0.1:$port/" |
            awk '/requests in/ {print $1}')
        after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
        kill "$pid"; wait "$pid" 2>/dev/null || true
        secs=${duration%s}
        echo "$r $setting $reqs $before $after" | awk -v tick="$tick" -v secs="$secs" \
            '{printf "round=%s stall=%s rps=%.0f cpu_us_per_req=%.3f\n", $1, $2, $3/secs,
              ($5-$4)/tick*1e6/$3}' | tee -a "$out"
    done
done
python3 - "$out" <<'PY'
import statistics, sys
rows = [dict(kv.split("=") for kv in l.split()) for l in open(sys.argv[1])]
med = {s: {k: statistics.median(float(r[k]) for r in rows if r["stall"] == s)
           for k in ("rps", "cpu_us_per_req")} for s in ("on", "off")}
for s, m in med.items():
    print(f"median stall={s} rps={m['rps']:.0f} cpu_us_per_req={m['cpu_us_per_req']:.3f}")
print(f"on/off rps={med['on']['rps'] / med['off']['rps']:.3f} "
      f"cpu_us_per_req={med['on']['cpu_us_per_req'] / med['off']['cpu_us_per_req']:.3f}")
PY
rm -f "$out"
