#!/usr/bin/env bash
# HTTP load on loopback: the hyper "Hello, world!" service on tickless (`hello_http`: one
# SO_REUSEPORT listener per core) and the same service with the same hyper settings on tokio's
# multi-thread runtime (`hello_http_tokio`), one after the other, with the same wrk settings.
# With `--app axum`: the axum app of the ecosystem crate instead, on tickless
# (`ecosystem/examples/axum.rs`, tickless's TimeoutLayer) and on tokio with `axum::serve`
# (`axum_tokio.rs`, tower-http's TimeoutLayer), loaded on its JSON route, `/json`.
#
#   benches/scripts/http_load.sh [--app hello|axum] [--threads N] [--connections N]
#                                [--duration 5s] [--rounds N] [--split] [--syscalls]
#                                [--rate R]
#
# --split (hello only) pins the server to CPU 0 (one tickless core, one tokio worker) and wrk to
# CPU 1 (one thread): the two sides never share a CPU.
#
# --rate R measures open-loop instead of with wrk: `loadgen` (benches/src/load/) sends R requests
# a second on a Poisson schedule over the same connections, each timed from its scheduled send
# (wrk is closed-loop: a stalled connection sends nothing, and the percentiles leave out what it
# did not send). Its rps is the achieved rate, its p50..p99 include the waits a stall caused.
# wrk still does the 1 s warm-up.
#
# --syscalls adds, after the rounds, one more run of each server (2 s of the same load) under
# `perf stat -e raw_syscalls:sys_enter` and prints the server's system calls per request
# (`syscalls_per_req`), kept apart from the timed rounds because counting slows each call.
#
# Defaults: wrk -t2 -c64 -d5s, 3 rounds, alternating tickless and tokio (so a slow minute of
# the machine hurts both), each run after a 1 s warm-up on a fresh server process. Bounded: at
# most rounds x 2 x (duration + warm-up) of load, and `--connections` sockets, all on 127.0.0.1.
#
# Prints one line per run and, per runtime, the median over the rounds, in `compare`'s format:
#   workload=<http_hello|http_axum> runtime=<tickless|tokio> rps=<requests/s> p50_us=... p75_us=...
#     p90_us=... p99_us=... cpu_us_per_req=<server CPU time (user+system) per request>
#     kernel_cpu_pct=<the share of it in the kernel (stime)> ...
# then the ratios tickless/tokio against the targets (rps >= 1.2x, p99 <= 1.0x, CPU per
# request <= 0.8x). wrk runs on the same cores as the servers, so requests per second and
# latency measure the pair; CPU per request (from /proc/<pid>/stat) is the server's own cost.
#
# Installs wrk from the OS packages (apt-get) if it is missing. Builds both examples in release
# mode (CARGO_TARGET_DIR is honoured; the axum examples default to target/eco, where the
# ecosystem crate is built).
set -euo pipefail
cd "$(dirname "$0")/../.."

threads=2
connections=64
duration=5s
rounds=3
app=hello
split=0
syscalls=0
rate=""
while [ $# -gt 0 ]; do
    case "$1" in
        --app) app=$2; shift 2 ;;
        --split) split=1; shift ;;
        --syscalls) syscalls=1; shift ;;
        --rate) rate=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --connections) connections=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
done

if ! command -v wrk >/dev/null 2>&1; then
    echo "# wrk is missing: installing it with apt-get" >&2
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    $sudo apt-get install -y wrk >/dev/null 2>&1 ||
        { $sudo apt-get update >/dev/null && $sudo apt-get install -y wrk >/dev/null; }
fi

case "$app" in
    hello)
        workload=http_hello path=/
        tickless_bin=hello_http tokio_bin=hello_http_tokio
        target_dir=${CARGO_TARGET_DIR:-target}
        build=(-p tickless-http --example hello_http --example hello_http_tokio) ;;
    axum)
        workload=http_axum path=/json
        tickless_bin=axum tokio_bin=axum_tokio
        target_dir=${CARGO_TARGET_DIR:-target/eco}
        build=(-p tickless-ecosystem-tests --example axum --example axum_tokio) ;;
    *) echo "unknown app: $app (hello or axum)" >&2; exit 2 ;;
esac
# --split (hello only): the server alone on CPU 0 (one tickless core, one tokio worker), wrk
# alone on CPU 1 (one thread), so that neither preempts the other: issue 14's "separate CPUs".
server_cpu=() wrk_cpu=() tickless_args=() tokio_args=() placement="servers on all CPUs"
if [ "$split" = 1 ]; then
    [ "$app" = hello ] || { echo "--split is for the hello app" >&2; exit 2; }
    server_cpu=(taskset -c 0) wrk_cpu=(taskset -c 1) threads=1
    tickless_args=(--cores 1) tokio_args=(--threads 1)
    placement="server on CPU 0 (1 core / 1 worker), wrk on CPU 1"
fi
echo "# building the servers (release)" >&2
CARGO_TARGET_DIR=$target_dir cargo build --release -q "${build[@]}"
bin_dir="$target_dir/release/examples"
if [ -n "$rate" ]; then
    cargo build --release -q -p tickless-benches --bin loadgen
    loadgen=${CARGO_TARGET_DIR:-target}/release/loadgen
fi

work=$(mktemp -d)
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# cpu_ticks, sys_ticks, run_delay_ns, preempted, to_us, busy_percent, wait_quiet.
. benches/scripts/load_lib.sh

# Starts a server on a free port, after the machine is quiet, and warms it up for 1 s: sets
# `server_pid` and `url`.
start_server() {
    local runtime=$1 binary=$2
    local args=()
    if [ "$runtime" = tickless ]; then args=("${tickless_args[@]}"); else args=("${tokio_args[@]}"); fi
    wait_quiet
    "${server_cpu[@]}" "$bin_dir/$binary" 0 "${args[@]}" >"$work/out" 2>"$work/err" &
    server_pid=$!
    url=$(server_url "$work/out" "$work/err" "$binary")
    "${wrk_cpu[@]}" wrk -t"$threads" -c"$connections" -d1s "$url$path" >/dev/null
}

stop_server() {
    kill -TERM "$server_pid"
    wait "$server_pid" || true
    server_pid=""
}

# Runs one server under load; prints its result line.
run_one() {
    local url
    start_server "$1" "$2"
    local runtime=$1
    local cpu0 cpu1 sys0 sys1 delay0 delay1 pre0 pre1
    cpu0=$(cpu_ticks "$server_pid")
    sys0=$(sys_ticks "$server_pid")
    delay0=$(run_delay_ns "$server_pid")
    pre0=$(preempted "$server_pid")
    if [ -n "$rate" ]; then
        "${wrk_cpu[@]}" "$loadgen" --url "$url$path" --rate "$rate" --duration "$duration" \
            --warmup 0 --conns "$connections" >"$work/load"
    else
        "${wrk_cpu[@]}" wrk -t"$threads" -c"$connections" -d"$duration" --latency "$url$path" >"$work/wrk"
    fi
    cpu1=$(cpu_ticks "$server_pid")
    sys1=$(sys_ticks "$server_pid")
    delay1=$(run_delay_ns "$server_pid")
    pre1=$(preempted "$server_pid")
    stop_server

    local requests rps errors p50 p75 p90 p99
    if [ -n "$rate" ]; then
        load_field() { tr ' ' '\n' <"$work/load" | awk -F= -v k="$1" '$1 == k { print $2 }'; }
        requests=$(load_field answered)
        rps=$(load_field achieved_rps)
        errors=$(load_field unanswered)
        p50=$(load_field p50_us)
        p75=$(load_field p75_us)
        p90=$(load_field p90_us)
        p99=$(load_field p99_us)
    else
    requests=$(awk '/requests in/ { print $1 }' "$work/wrk")
    rps=$(awk '/^Requests\/sec:/ { print $2 }' "$work/wrk")
    errors=$(awk '/Socket errors:/ { gsub(",", ""); print $4 + $6 + $8 + $10 }
                  /Non-2xx/ { print $NF }' "$work/wrk" | awk '{ s += $1 } END { print s + 0 }')
    p50=$(to_us "$(awk '$1 == "50%" { print $2 }' "$work/wrk")")
    p75=$(to_us "$(awk '$1 == "75%" { print $2 }' "$work/wrk")")
    p90=$(to_us "$(awk '$1 == "90%" { print $2 }' "$work/wrk")")
    p99=$(to_us "$(awk '$1 == "99%" { print $2 }' "$work/wrk")")
    fi
    local cpu_us
    cpu_us=$(awk -v t=$((cpu1 - cpu0)) -v hz="$clk_tck" -v n="$requests" \
        'BEGIN { printf "%.2f", t * 1000000 / hz / n }')
    local kernel_pct
    kernel_pct=$(awk -v s=$((sys1 - sys0)) -v t=$((cpu1 - cpu0)) \
        'BEGIN { printf "%.1f", (t > 0 ? s * 100 / t : 0) }')
    local delay_us preempt_k
    delay_us=$(awk -v d=$((delay1 - delay0)) -v n="$requests" 'BEGIN { printf "%.2f", d / 1000 / n }')
    preempt_k=$(awk -v p=$((pre1 - pre0)) -v n="$requests" 'BEGIN { printf "%.2f", p * 1000 / n }')
    echo "workload=$workload runtime=$runtime rps=$rps p50_us=$p50 p75_us=$p75 p90_us=$p90" \
        "p99_us=$p99 cpu_us_per_req=$cpu_us kernel_cpu_pct=$kernel_pct" \
        "run_delay_us_per_req=$delay_us" \
        "preempted_per_1k_req=$preempt_k requests=$requests errors=$errors"
}

echo "# $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')), $(rustc --version)"
if [ -n "$rate" ]; then
    echo "# loadgen --rate $rate --conns $connections --duration $duration (open loop, Poisson), GET $path, $rounds rounds, $placement"
else
    echo "# wrk -t$threads -c$connections -d$duration --latency, GET $path, $rounds rounds, $placement"
fi
: >"$work/results"
for round in $(seq 1 "$rounds"); do
    for pair in "tickless:$tickless_bin" "tokio:$tokio_bin"; do
        echo "# round $round: ${pair%%:*}" >&2
        run_one "${pair%%:*}" "${pair#*:}" | tee -a "$work/results"
    done
done

# Medians per runtime and metric (the middle run; for an even count the lower middle).
median() {
    local runtime=$1 metric=$2
    grep "runtime=$runtime " "$work/results" | tr ' ' '\n' | awk -F= -v m="$metric" '$1 == m { print $2 }' |
        sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
echo "# medians over $rounds rounds"
for runtime in tickless tokio; do
    line="workload=$workload runtime=$runtime"
    for metric in rps p50_us p75_us p90_us p99_us cpu_us_per_req kernel_cpu_pct \
        run_delay_us_per_req preempted_per_1k_req; do
        line="$line $metric=$(median "$runtime" "$metric")"
    done
    echo "$line runs=$rounds"
done

# One server's system calls per request: every system call its threads enter while wrk runs
# for 2 s, counted by perf on the raw_syscalls:sys_enter tracepoint, and the calls a server's
# request path makes, one tracepoint each (those this kernel has).
count_syscalls() {
    local url runtime=$1 events=raw_syscalls:sys_enter call
    for call in read recvfrom sendto writev write epoll_wait epoll_pwait epoll_pwait2 futex; do
        if [ -e "/sys/kernel/tracing/events/syscalls/sys_enter_$call" ] ||
            [ -e "/sys/kernel/debug/tracing/events/syscalls/sys_enter_$call" ]; then
            events="$events,syscalls:sys_enter_$call"
        fi
    done
    start_server "$1" "$2"
    perf stat -e "$events" -x, -o "$work/perf" -p "$server_pid" -- \
        "${wrk_cpu[@]}" wrk -t"$threads" -c"$connections" -d2s "$url$path" >"$work/wrk"
    stop_server
    local requests
    requests=$(awk '/requests in/ { print $1 }' "$work/wrk")
    awk -F, -v n="$requests" -v w="$workload" -v r="$runtime" '
        $3 == "raw_syscalls:sys_enter" { total = $1 / n }
        $3 ~ /^syscalls:sys_enter_/ && $1 > 0 {
            name = $3; sub(/^syscalls:sys_enter_/, "", name)
            calls = calls sprintf(" %s=%.3f", name, $1 / n)
        }
        END { printf "workload=%s runtime=%s syscalls_per_req=%.3f%s requests=%d" \
                     " (under perf stat; not timed)\n", w, r, total, calls, n }' "$work/perf"
}
if [ "$syscalls" = 1 ]; then
    if command -v perf >/dev/null 2>&1; then
        echo "# system calls per request (perf stat -e raw_syscalls:sys_enter, 2 s each)"
        count_syscalls tickless "$tickless_bin"
        count_syscalls tokio "$tokio_bin"
    else
        echo "# --syscalls: perf is missing, no system call counts" >&2
    fi
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
rps_ratio=$(ratio "$(median tickless rps)" "$(median tokio rps)")
p99_ratio=$(ratio "$(median tickless p99_us)" "$(median tokio p99_us)")
cpu_ratio=$(ratio "$(median tickless cpu_us_per_req)" "$(median tokio cpu_us_per_req)")
verdict() { awk -v r="$1" -v t="$2" -v dir="$3" 'BEGIN {
    ok = (dir == "ge") ? (r >= t) : (r <= t); print ok ? "met" : "missed" }'; }
echo "# tickless / tokio"
echo "ratio workload=$workload rps=$rps_ratio (target >= 1.20: $(verdict "$rps_ratio" 1.2 ge))" \
    "p99=$p99_ratio (target <= 1.00: $(verdict "$p99_ratio" 1.0 le))" \
    "cpu_per_req=$cpu_ratio (target <= 0.80: $(verdict "$cpu_ratio" 0.8 le))"
