# Helpers the load scripts share (`benches/scripts/http_load.sh`, `ecosystem/scripts/pg_load.sh`):
# a process's CPU time and waits from /proc, wrk's latency figures, and waiting for the machine to
# be quiet before a run, a starting server's address. Sourced, not run.

clk_tck=$(getconf CLK_TCK)

# utime + stime of a process, in clock ticks (fields 14 and 15, counted after the command name,
# which may contain spaces, ends at the last ')').
cpu_ticks() {
    sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}
# stime alone: the part of it spent in the kernel (sampled at each clock tick, so a share of a
# few seconds' load, not of one request).
sys_ticks() {
    sed 's/.*) //' "/proc/$1/stat" | awk '{ print $13 }'
}

# Nanoseconds the process's threads spent runnable but waiting for a CPU (schedstat's second
# field, summed over threads), and their involuntary context switches: where a tail comes from
# when the server shares its CPUs.
run_delay_ns() {
    cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $2 } END { printf "%d", s }'
}
preempted() {
    cat /proc/"$1"/task/*/status 2>/dev/null |
        awk '/^nonvoluntary_ctxt_switches/ { s += $2 } END { printf "%d", s }'
}

# A wrk latency figure ("812.00us", "1.23ms", "2.01s") in microseconds.
to_us() {
    awk -v v="$1" 'BEGIN {
        n = v + 0
        if (v ~ /us$/) m = 1; else if (v ~ /ms$/) m = 1000; else if (v ~ /s$/) m = 1000000; else m = 1
        printf "%.1f", n * m
    }'
}

# Percentage of CPU time not idle over the last second, machine-wide.
busy_percent() {
    local a b
    a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
    sleep 1
    b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
    echo "$a $b" | awk '{ busy = $3 - $1; idle = $4 - $2; printf "%d", 100 * busy / (busy + idle + 1) }'
}

# Waits (at most 2 minutes) until something else's load has passed: the figures are only
# worth comparing on an otherwise idle machine. Says on stdout (a comment line, kept in the raw
# output) how busy the machine was in the last second before the run.
wait_quiet() {
    local busy
    if [ "${LOAD_NO_WAIT:-0}" = 1 ]; then
        echo "# LOAD_NO_WAIT=1: not waiting for a quiet machine ($(busy_percent)% busy)"
        return 0
    fi
    for _ in $(seq 1 120); do
        busy=$(busy_percent)
        if [ "$busy" -le 10 ]; then
            echo "# machine ${busy}% busy before the run"
            return 0
        fi
        echo "# the machine is ${busy}% busy: waiting for it to be idle" >&2
    done
    echo "# WARNING: the machine stayed busy (${busy}%): figures are disturbed" | tee /dev/stderr
}

# Prints the first `http://ADDR` a starting server wrote to its standard output (the file $1),
# waiting up to 10 s for it; if none comes, says so with the server's standard error (the file
# $2) under the name $3 and fails (under `set -e`, `url=$(server_url ...)` ends the script).
server_url() {
    local url=""
    for _ in $(seq 1 100); do
        url=$(grep -o 'http://[0-9.:]*' "$1" 2>/dev/null | head -n1 || true)
        if [ -n "$url" ]; then
            echo "$url"
            return 0
        fi
        sleep 0.1
    done
    echo "$3 did not start: $(cat "$2")" >&2
    return 1
}
