/* What glibc's cancellation-point wrappers cost: a pipe ping-pong on one thread (write, wait,
 * read, write, wait, read: six calls a round trip, level-triggered epoll), made through the
 * wrappers (read, write, epoll_wait) or through syscall(2), with or without a second thread
 * alive (glibc makes a call a cancellation point, two atomic read-modify-writes of the thread's
 * cancellation word, only in a multi-threaded process). Prints ns per round trip.
 *
 *   gcc -O2 -pthread -o /tmp/syscall_wrappers benches/c/syscall_wrappers.c
 *   taskset -c 1 /tmp/syscall_wrappers 0 1      # RAW(0 wrappers, 1 syscall) THREADS(0, 1)
 *
 * benches/scripts/c_loops.sh builds and runs it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *idle(void *arg) {
    (void)arg;
    pause();
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: syscall_wrappers RAW THREADS [N]\n");
        return 2;
    }
    int raw = atoi(argv[1]), threads = atoi(argv[2]);
    int n = argc > 3 ? atoi(argv[3]) : 1000000;
    pthread_t t;
    if (threads) pthread_create(&t, 0, idle, 0);
    int a[2], b[2];
    if (pipe2(a, O_NONBLOCK) || pipe2(b, O_NONBLOCK)) return 1;
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.fd = a[0];
    epoll_ctl(ep, EPOLL_CTL_ADD, a[0], &ev);
    ev.data.fd = b[0];
    epoll_ctl(ep, EPOLL_CTL_ADD, b[0], &ev);
    char buf[4] = {0};
    struct epoll_event e;
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++) {
        if (!raw) {
            if (write(a[1], buf, 4) < 0 || epoll_wait(ep, &e, 1, -1) < 0 || read(a[0], buf, 4) < 0 ||
                write(b[1], buf, 4) < 0 || epoll_wait(ep, &e, 1, -1) < 0 || read(b[0], buf, 4) < 0)
                return 1;
        } else {
            syscall(SYS_write, a[1], buf, 4);
            syscall(SYS_epoll_pwait, ep, &e, 1, -1, NULL, 0);
            syscall(SYS_read, a[0], buf, 4);
            syscall(SYS_write, b[1], buf, 4);
            syscall(SYS_epoll_pwait, ep, &e, 1, -1, NULL, 0);
            syscall(SYS_read, b[0], buf, 4);
        }
    }
    printf("syscall_wrappers calls=%s threads=%d ns_per_rtt=%.0f\n", raw ? "syscall" : "glibc",
           threads ? 2 : 1, (double)(now_ns() - t0) / n);
    return 0;
}
