#!/usr/bin/env bash
# The two C loops the timer lead and the raw system calls were measured with, built and run
# with no runtime in the way (gcc; no other dependency):
#
#   bash benches/scripts/c_loops.sh
#
# - wakeup_latency: how late a timerfd (and an epoll_pwait2 timeout) wakeup reaches a thread,
#   100 µs and 1 ms sleeps, percentiles in µs: what `Builder::wakeup_lead_max` makes up for.
# - syscall_wrappers: a pipe ping-pong's ns per round trip through glibc's read/write/
#   epoll_wait and through syscall(2), with one thread and with two: what the reactor's raw
#   calls save (io/src/sys.rs).
# - clock_read: ns per read of CLOCK_MONOTONIC (a timeout's deadline), CLOCK_MONOTONIC_COARSE
#   (and its granularity) and the TSC: the floor under a per-message timeout's cost.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
gcc -O2 -o "$out/wakeup_latency" benches/c/wakeup_latency.c
gcc -O2 -pthread -o "$out/syscall_wrappers" benches/c/syscall_wrappers.c
gcc -O2 -o "$out/clock_read" benches/c/clock_read.c
taskset -c 0 "$out/clock_read"
for period in 100 1000; do
    for mode in 0 1; do
        taskset -c 0 "$out/wakeup_latency" "$period" "$mode"
    done
done
for round in 1 2 3; do
    for threads in 1 0; do
        for raw in 0 1; do
            taskset -c 1 "$out/syscall_wrappers" "$raw" "$threads"
        done
    done
done
