/* How late a timer wakeup reaches a thread on this machine, with no runtime in the way: a loop
 * of N sleeps of PERIOD_US each, on a timerfd armed at an absolute deadline and waited for with
 * epoll_wait (mode 0, what a tickless core does with ClockDevice::TimerFd), or on an
 * epoll_pwait2 timeout (mode 1, ClockDevice::Epoll), with the thread's timer slack at 1 ns.
 * Prints percentiles of the lateness (wakeup - deadline) in microseconds.
 *
 *   gcc -O2 -o /tmp/wakeup_latency benches/c/wakeup_latency.c
 *   taskset -c 0 /tmp/wakeup_latency 100 0      # PERIOD_US MODE
 *
 * benches/scripts/c_loops.sh builds and runs it. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: wakeup_latency PERIOD_US MODE(0 timerfd, 1 epoll_pwait2) [N]\n");
        return 2;
    }
    uint64_t period = strtoull(argv[1], 0, 10) * 1000;
    int mode = atoi(argv[2]);
    int n = argc > 3 ? atoi(argv[3]) : 3000;
    prctl(PR_SET_TIMERSLACK, 1);
    int ep = epoll_create1(0);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN};
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
    uint64_t *late = malloc(sizeof(uint64_t) * (size_t)n);
    for (int i = 0; i < n; i++) {
        uint64_t d = now_ns() + period;
        struct epoll_event e;
        if (mode == 0) {
            struct itimerspec its = {0};
            its.it_value.tv_sec = (time_t)(d / 1000000000u);
            its.it_value.tv_nsec = (long)(d % 1000000000u);
            timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, 0);
            epoll_wait(ep, &e, 1, -1);
            uint64_t x;
            if (read(tfd, &x, sizeof x) < 0) { /* nothing to read: woken otherwise */ }
        } else {
            uint64_t r = d - now_ns();
            struct timespec ts = {(time_t)(r / 1000000000u), (long)(r % 1000000000u)};
            epoll_pwait2(ep, &e, 1, &ts, 0);
        }
        late[i] = now_ns() - d;
    }
    qsort(late, (size_t)n, sizeof late[0], cmp);
#define P(q) (late[(size_t)((double)n * (q))] / 1e3)
    printf("wakeup_latency period_us=%llu mode=%s p10=%.1f p50=%.1f p90=%.1f p95=%.1f p99=%.1f\n",
           (unsigned long long)(period / 1000), mode ? "epoll_pwait2" : "timerfd", P(0.10), P(0.50),
           P(0.90), P(0.95), P(0.99));
    return 0;
}
