/* What a clock read costs here, against what a per-message timeout may cost: N reads of
 * CLOCK_MONOTONIC (what a deadline is taken from), of CLOCK_MONOTONIC_COARSE (cheaper, but as
 * coarse as the kernel's tick, which it prints) and of the TSC, in ns per read.
 *
 *   gcc -O2 -o /tmp/clock_read benches/c/clock_read.c && taskset -c 0 /tmp/clock_read
 *
 * benches/scripts/c_loops.sh builds and runs it. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static double per_read(clockid_t id, int n) {
    struct timespec t;
    volatile long sink = 0;
    uint64_t a = now_ns();
    for (int i = 0; i < n; i++) {
        clock_gettime(id, &t);
        sink += t.tv_nsec;
    }
    return (double)(now_ns() - a) / n;
}

int main(void) {
    int n = 10000000;
    struct timespec res;
    clock_getres(CLOCK_MONOTONIC_COARSE, &res);
    printf("clock_read monotonic_ns=%.1f coarse_ns=%.1f coarse_granularity_us=%ld", per_read(CLOCK_MONOTONIC, n),
           per_read(CLOCK_MONOTONIC_COARSE, n), res.tv_nsec / 1000);
#if defined(__x86_64__)
    volatile uint64_t sink = 0;
    uint64_t a = now_ns();
    for (int i = 0; i < n; i++) sink += __rdtsc();
    printf(" rdtsc_ns=%.1f", (double)(now_ns() - a) / n);
#endif
    printf("\n");
    return 0;
}
