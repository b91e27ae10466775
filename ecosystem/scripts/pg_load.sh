#!/usr/bin/env bash
# axum + sqlx + PostgreSQL, tickless against tokio: a real PostgreSQL (Debian's `postgresql`,
# installed with apt-get if missing, started here on its own port and data directory), the app
# of `ecosystem/examples/pg_app/` (one query by primary key a request, `GET /user/{id}`) on
# tickless with the tokio context on every core (`pg.rs`: one pool for the process, `shared`,
# and one pool per core, `per-core`) and on tokio's multi-thread runtime (`pg_tokio.rs`), loaded
# in turn with the same wrk settings.
#
#   ecosystem/scripts/pg_load.sh [--duration 5s] [--rounds 3] [--connections 32] [--threads 2]
#                                [--pool 16] [--wakes]
#
# Prints one line per run and, per server, the median over the rounds:
#   workload=pg_user runtime=<tickless_shared|tickless_per_core|tokio> rps=... p50_us=...
#     p99_us=... cpu_us_per_req=<the server's CPU time (user+system) per request>
#     pg_cpu_us_per_req=<PostgreSQL's> ctx_switches_per_req=<the server's threads', voluntary
#     and not> remote_wakes_per_req=<tickless: wakes its cores were handed from other threads,
#     sent or avoided (`/stats`)> ...
# then tickless / tokio for each tickless server. With --wakes, one more 2 s run of each server
# under `perf record -e sched:sched_wakeup` counts the wakeups one thread of the server gave
# another (`cross_thread_wakes_per_req`; a thread woken while it ran makes no such event), apart
# from the timed rounds because tracing slows the server.
#
# Bounded: rounds x 3 x (duration + 1 s warm-up) of load on 127.0.0.1; PostgreSQL listens on
# 127.0.0.1 only, keeps its data in a temporary directory (fsync off: a benchmark's database),
# and is stopped and removed on exit. Everything (PostgreSQL, the servers, wrk) shares the
# machine's CPUs, as a service and its database on one host do.
#
# Builds the examples in release mode (CARGO_TARGET_DIR is honoured; default target/eco).
set -euo pipefail
cd "$(dirname "$0")/../.."

duration=5s
rounds=3
connections=32
threads=2
pool=16
wakes=0
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) duration=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --connections) connections=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --pool) pool=$2; shift 2 ;;
        --wakes) wakes=1; shift ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
done

# cpu_ticks, run_delay_ns, preempted, to_us, busy_percent, wait_quiet.
. benches/scripts/load_lib.sh

sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
install() {
    echo "# $1 is missing: installing Debian's $2 with apt-get" >&2
    $sudo apt-get install -y --no-install-recommends "$2" >&2 ||
        { $sudo apt-get update >&2 && $sudo apt-get install -y --no-install-recommends "$2" >&2; }
}
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/pg_ctl" ]; then
    install PostgreSQL postgresql
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
fi
command -v wrk >/dev/null 2>&1 || install wrk wrk

target_dir=${CARGO_TARGET_DIR:-target/eco}
echo "# building the servers (release)" >&2
CARGO_TARGET_DIR=$target_dir cargo build --release -q -p tickless-ecosystem-tests \
    --example pg --example pg_tokio
bin_dir="$target_dir/release/examples"

work=$(mktemp -d)
chmod 755 "$work"
server_pid=""
pg_up=0
# PostgreSQL refuses to run as root: as root, it runs as the `postgres` user the package made.
as_pg=()
if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); fi
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    if [ "$pg_up" = 1 ]; then "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# A free port for PostgreSQL.
pg_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir "$work/pg" "$work/sock"
if [ "$(id -u)" = 0 ]; then chown postgres "$work/pg" "$work/sock"; fi
"${as_pg[@]}" "$pg_bin/initdb" -D "$work/pg" -U postgres -A trust >/dev/null
"${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/sock/pg.log" -w \
    -o "-p $pg_port -k $work/sock -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
    start >/dev/null
pg_up=1
psql_() { psql -q -h 127.0.0.1 -p "$pg_port" -U postgres -v ON_ERROR_STOP=1 "$@"; }
psql_ -c "CREATE TABLE users (id INT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL)"
psql_ -c "INSERT INTO users SELECT i, 'user ' || i, 'user' || i || '@example.com' FROM generate_series(1, 1000) i"
url="postgres://postgres@127.0.0.1:$pg_port/postgres"
path=/user/42

# The server's and PostgreSQL's processes: CPU ticks of the postmaster's children summed.
pg_ticks() {
    local pid total=0 t
    for pid in $(pgrep -P "$(head -n1 "$work/pg/postmaster.pid")") "$(head -n1 "$work/pg/postmaster.pid")"; do
        t=$(cpu_ticks "$pid" 2>/dev/null || echo 0)
        total=$((total + t))
    done
    echo "$total"
}
# PostgreSQL's own counts for the database: sessions opened so far, transactions, backends now.
pg_stats() {
    psql_ -At -F' ' -c "SELECT pg_stat_force_next_flush()" \
        -c "SELECT sessions, xact_commit + xact_rollback, numbackends FROM pg_stat_database
            WHERE datname = 'postgres'" | tail -n1
}
ctx_switches() {
    cat /proc/"$1"/task/*/status 2>/dev/null |
        awk '/ctxt_switches/ { s += $2 } END { printf "%d", s }'
}
remote_wakes() {
    if [ "$1" = tokio ]; then echo 0; return; fi
    curl -sf "$base/stats" | tr ' ' '\n' | awk -F= '{ s += $2 } END { printf "%d", s }'
}

start_server() {
    local name=$1
    local cmd
    case "$name" in
        tickless_shared) cmd=("$bin_dir/pg" 0 "$url" "$pool" shared) ;;
        tickless_per_core) cmd=("$bin_dir/pg" 0 "$url" "$pool" per-core) ;;
        tokio) cmd=("$bin_dir/pg_tokio" 0 "$url" "$pool") ;;
    esac
    wait_quiet
    "${cmd[@]}" >"$work/out" 2>"$work/err" &
    server_pid=$!
    base=$(server_url "$work/out" "$work/err" "$name")
    curl -sf "$base$path" >/dev/null || { echo "$name: $path failed: $(curl -s "$base$path")" >&2; exit 1; }
    wrk -t"$threads" -c"$connections" -d1s "$base$path" >/dev/null
}

stop_server() {
    kill -TERM "$server_pid"
    wait "$server_pid" || true
    server_pid=""
}

run_one() {
    local name=$1
    start_server "$name"
    local cpu0 cpu1 pg0 pg1 cs0 cs1 rw0 rw1
    cpu0=$(cpu_ticks "$server_pid"); pg0=$(pg_ticks); cs0=$(ctx_switches "$server_pid")
    rw0=$(remote_wakes "$name")
    local pgs0 pgs1
    pgs0=$(pg_stats)
    wrk -t"$threads" -c"$connections" -d"$duration" --latency "$base$path" >"$work/wrk"
    pgs1=$(pg_stats)
    rw1=$(remote_wakes "$name")
    cpu1=$(cpu_ticks "$server_pid"); pg1=$(pg_ticks); cs1=$(ctx_switches "$server_pid")
    stop_server
    local requests rps errors p50 p99
    requests=$(awk '/requests in/ { print $1 }' "$work/wrk")
    rps=$(awk '/^Requests\/sec:/ { print $2 }' "$work/wrk")
    errors=$(awk '/Socket errors:/ { gsub(",", ""); print $4 + $6 + $8 + $10 }
                  /Non-2xx/ { print $NF }' "$work/wrk" | awk '{ s += $1 } END { print s + 0 }')
    p50=$(to_us "$(awk '$1 == "50%" { print $2 }' "$work/wrk")")
    p99=$(to_us "$(awk '$1 == "99%" { print $2 }' "$work/wrk")")
    awk -v name="$name" -v rps="$rps" -v p50="$p50" -v p99="$p99" -v n="$requests" \
        -v cpu=$((cpu1 - cpu0)) -v pg=$((pg1 - pg0)) -v cs=$((cs1 - cs0)) -v rw=$((rw1 - rw0)) \
        -v hz="$clk_tck" -v errors="$errors" -v s0="$pgs0" -v s1="$pgs1" 'BEGIN {
        split(s0, a, " "); split(s1, b, " ")
        printf "workload=pg_user runtime=%s rps=%s p50_us=%s p99_us=%s cpu_us_per_req=%.2f" \
               " pg_cpu_us_per_req=%.2f ctx_switches_per_req=%.3f remote_wakes_per_req=%s" \
               " pg_sessions=%d pg_xacts_per_req=%.3f pg_backends=%d requests=%d errors=%d\n",
               name, rps, p50, p99, cpu * 1e6 / hz / n, pg * 1e6 / hz / n, cs / n,
               (name == "tokio" ? "-" : sprintf("%.3f", rw / n)), b[1] - a[1], (b[2] - a[2]) / n,
               b[3], n, errors }'
}

servers=(tickless_shared tickless_per_core tokio)
echo "# $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')), $(rustc --version)," \
    "PostgreSQL $("$pg_bin/postgres" --version | awk '{ print $NF }')"
echo "# wrk -t$threads -c$connections -d$duration --latency, GET $path, pool $pool, $rounds rounds," \
    "the servers in turn, the order rotating"
: >"$work/results"
for round in $(seq 1 "$rounds"); do
    for i in 0 1 2; do
        name=${servers[$(((i + round - 1) % 3))]}
        echo "# round $round: $name" >&2
        run_one "$name" | tee -a "$work/results"
    done
done

median() {
    grep "runtime=$1 " "$work/results" | tr ' ' '\n' | awk -F= -v m="$2" '$1 == m { print $2 }' |
        sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
echo "# medians over $rounds rounds"
for name in "${servers[@]}"; do
    line="workload=pg_user runtime=$name"
    for metric in rps p50_us p99_us cpu_us_per_req pg_cpu_us_per_req ctx_switches_per_req \
        remote_wakes_per_req; do
        line="$line $metric=$(median "$name" "$metric")"
    done
    echo "$line runs=$rounds"
done

# Wakeups one thread of the server gave another (sched_wakeup events whose waker and wakee are
# both its threads), during 2 s of the same load.
count_wakes() {
    local name=$1
    start_server "$name"
    perf record -q -e sched:sched_wakeup -a -o "$work/perf.data" -- \
        wrk -t"$threads" -c"$connections" -d2s "$base$path" >"$work/wrk" 2>/dev/null
    local tids requests
    tids=$(ls /proc/"$server_pid"/task | tr '\n' ' ')
    stop_server
    requests=$(awk '/requests in/ { print $1 }' "$work/wrk")
    perf script -i "$work/perf.data" -F tid,trace 2>/dev/null |
        awk -v tids="$tids" -v n="$requests" -v name="$name" '
            BEGIN { split(tids, t, " "); for (i in t) ours[t[i]] = 1 }
            {
                waker = $1
                if (match($0, /pid=[0-9]+/)) wakee = substr($0, RSTART + 4, RLENGTH - 4); else next
                if ((waker in ours) && (wakee in ours) && waker != wakee) cross++
                else if (wakee in ours) outside++
            }
            END { printf "workload=pg_user runtime=%s cross_thread_wakes_per_req=%.3f" \
                         " woken_from_outside_per_req=%.3f requests=%d (under perf record; not timed)\n",
                         name, cross / n, outside / n, n }'
}
if [ "$wakes" = 1 ]; then
    if command -v perf >/dev/null 2>&1; then
        echo "# wakeups between the server's threads (perf record -e sched:sched_wakeup, 2 s each)"
        for name in "${servers[@]}"; do count_wakes "$name"; done
    else
        echo "# --wakes: perf is missing, no wakeup counts" >&2
    fi
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "# tickless / tokio (targets: rps >= 1.00, CPU per request <= 1.00)"
for name in tickless_shared tickless_per_core; do
    echo "ratio workload=pg_user runtime=$name rps=$(ratio "$(median "$name" rps)" "$(median tokio rps)")" \
        "p99=$(ratio "$(median "$name" p99_us)" "$(median tokio p99_us)")" \
        "cpu_per_req=$(ratio "$(median "$name" cpu_us_per_req)" "$(median tokio cpu_us_per_req)")"
done
