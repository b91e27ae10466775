//! The clock event devices (`Builder::clock_device`): what a timer wakeup costs in system
//! calls with each (through the core's counters), that the epoll device fires timers in order
//! while the core sleeps and while it never does, and that it gives the thread its kernel
//! timer slack back.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tickless::time::{sleep, Sleep};
use tickless::{Builder, ClockDevice, CoreStats, Runtime};

fn runtime(device: ClockDevice) -> Runtime {
    // No tokio context: with one, the core waits in tokio's reactor on the timerfd whatever
    // the device.
    Builder::new()
        .cores(1)
        .clock_device(device)
        .tokio_context(false)
        .build()
        .expect("a one-core runtime")
}

fn exact(d: Duration) -> Sleep {
    sleep(d).slack(Duration::ZERO)
}

/// `n` exact 200 µs sleeps one after the other, each its own wakeup; the counters they cost.
fn sequential_sleeps(rt: &Runtime, n: u64) -> CoreStats {
    let before = rt.stats().total;
    rt.block_on(async {
        for _ in 0..n {
            exact(Duration::from_micros(200)).await;
        }
    });
    rt.stats().total - before
}

const SLEEPS: u64 = 50;

#[test]
fn a_timer_wakeup_costs_one_system_call_on_the_epoll_device_and_two_on_the_timerfd() {
    let epoll = sequential_sleeps(&runtime(ClockDevice::Epoll), SLEEPS);
    assert_eq!(epoll.timer_fires, SLEEPS);
    assert_eq!(
        epoll.timerfd_rearms, 0,
        "the epoll device has no timerfd: {epoll:?}"
    );
    assert!(
        epoll.parks >= SLEEPS,
        "each sleep is a wakeup of its own: {epoll:?}"
    );
    // One epoll_pwait2 a wakeup (and one more per sleep at most: a poll that finds the
    // deadline just passed).
    assert!(epoll.io_polls <= 2 * SLEEPS, "{epoll:?}");
    assert_eq!(epoll.device_spurious, 0, "{epoll:?}");

    let timerfd = sequential_sleeps(&runtime(ClockDevice::TimerFd), SLEEPS);
    assert_eq!(timerfd.timer_fires, SLEEPS);
    // The timerfd is re-programmed for every sleep, on top of the epoll_wait.
    assert!(timerfd.timerfd_rearms >= SLEEPS, "{timerfd:?}");
    assert!(timerfd.parks >= SLEEPS, "{timerfd:?}");
}

#[test]
fn the_epoll_device_fires_timers_in_deadline_order() {
    let rt = runtime(ClockDevice::Epoll);
    let order = Rc::new(RefCell::new(Vec::new()));
    rt.block_on(async {
        let mut tasks = Vec::new();
        for ms in [3u64, 1, 4, 2] {
            let order = order.clone();
            tasks.push(tickless::spawn_local(async move {
                exact(Duration::from_millis(ms)).await;
                order.borrow_mut().push(ms);
            }));
        }
        for t in tasks {
            t.await.expect("no sleeping task panics");
        }
    });
    assert_eq!(*order.borrow(), [1, 2, 3, 4]);
    assert_eq!(rt.stats().total.timerfd_rearms, 0);
}

/// A core that idles once (its device armed for a short sleep, which fires), then never
/// again: only a clock read at the fairness polls can notice its other timer's deadline.
fn fires_while_busy(device: ClockDevice) {
    let rt = runtime(device);
    let fired = rt.block_on(async {
        let done = Rc::new(Cell::new(false));
        let flag = done.clone();
        let timer = tickless::spawn_local(async move {
            exact(Duration::from_millis(2)).await;
            flag.set(true);
        });
        exact(Duration::from_micros(100)).await;
        // Bounded, so that a device that never fires fails rather than hangs.
        let mut spins = 0u64;
        while !done.get() && spins < 20_000_000 {
            tickless::yield_now().await;
            spins += 1;
        }
        if done.get() {
            timer.await.expect("the timer task does not panic");
        }
        done.get()
    });
    assert!(fired, "a busy core never fired its timer ({device:?})");
}

/// A core asleep with its device armed for a 2 ms timer, woken before it by another thread
/// with a task that keeps it busy: the timer must fire while that task still runs.
fn fires_when_woken_early_then_busy(device: ClockDevice) {
    let rt = runtime(device);
    let handle = rt.handle(0);
    let busy_ended = Arc::new(AtomicBool::new(false));
    let fired = Arc::new(AtomicBool::new(false));
    let fired_during_busy = rt.block_on({
        let (busy_ended, fired) = (busy_ended.clone(), fired.clone());
        async move {
            let timer = tickless::spawn_local({
                let (busy_ended, fired) = (busy_ended.clone(), fired.clone());
                async move {
                    exact(Duration::from_millis(2)).await;
                    fired.store(true, Ordering::SeqCst);
                    !busy_ended.load(Ordering::SeqCst)
                }
            });
            let waker = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_micros(200));
                handle.spawn(async move {
                    let mut spins = 0u64;
                    while !fired.load(Ordering::SeqCst) && spins < 20_000_000 {
                        tickless::yield_now().await;
                        spins += 1;
                    }
                    busy_ended.store(true, Ordering::SeqCst);
                });
            });
            let during = timer.await.expect("the timer task does not panic");
            waker.join().expect("the waking thread does not panic");
            during
        }
    });
    assert!(
        fired_during_busy,
        "the timer waited for the busy task to end ({device:?})"
    );
}

#[test]
fn the_epoll_device_fires_a_timer_while_the_core_never_goes_idle() {
    fires_while_busy(ClockDevice::Epoll);
    fires_when_woken_early_then_busy(ClockDevice::Epoll);
}

#[test]
fn the_timerfd_device_fires_a_timer_while_the_core_never_goes_idle() {
    fires_while_busy(ClockDevice::TimerFd);
    fires_when_woken_early_then_busy(ClockDevice::TimerFd);
}

fn timer_slack() -> libc::c_int {
    // SAFETY: PR_GET_TIMERSLACK takes no pointers.
    unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) }
}

#[test]
fn the_epoll_device_lowers_the_kernel_timer_slack_only_while_the_core_runs() {
    let before = timer_slack();
    assert!(
        before > 1,
        "the default kernel timer slack is 50 µs, not {before} ns"
    );
    let rt = runtime(ClockDevice::Epoll);
    let inside = rt.block_on(async { timer_slack() });
    assert_eq!(inside, 1, "the epoll wait would end up to the slack late");
    assert_eq!(
        timer_slack(),
        before,
        "block_on gives the caller's thread its slack back"
    );
    let timerfd = runtime(ClockDevice::TimerFd);
    assert_eq!(timerfd.block_on(async { timer_slack() }), before);
}

#[test]
fn the_timerfd_is_disarmed_when_its_last_timer_is_cancelled() {
    // Eager re-programs at once: cancelling the only timer disarms the timerfd, so the core,
    // then waiting for another thread, parks once and is woken once, by that thread. A timerfd
    // left armed would wake it at 2 ms as well.
    let rt = Builder::new()
        .cores(1)
        .timer_policy(tickless::RearmPolicy::Eager)
        .tokio_context(false)
        .build()
        .expect("a one-core runtime");
    let before = rt.stats().total;
    rt.block_on(async {
        // A deadline given: a sleep made for a duration waits for the loop's clock reading
        // (a young timer), and dropped in the poll that made it never reaches the wheel.
        let deadline = tickless::time::Instant::now() + Duration::from_millis(2);
        let mut sleep = std::pin::pin!(tickless::time::sleep_until(deadline).slack(Duration::ZERO));
        // One poll registers it, and Eager arms the timerfd for it.
        let pending =
            std::future::poll_fn(|cx| std::task::Poll::Ready(sleep.as_mut().poll(cx).is_pending()))
                .await;
        assert!(pending);
    });
    let armed = rt.stats().total - before;
    assert_eq!(
        armed.timerfd_rearms, 2,
        "armed, then disarmed by the drop: {armed:?}"
    );
    let before = rt.stats().total;
    rt.block_on(async {
        tickless::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(20))).await
    })
    .expect("the blocking job does not panic");
    let waited = rt.stats().total - before;
    assert_eq!(
        waited.parks, 1,
        "woken only by the blocking job: {waited:?}"
    );
}

#[test]
fn the_epoll_device_serves_paused_time_and_every_core() {
    // Paused time never arms a device: the core jumps to the next timer.
    let paused = Builder::new()
        .cores(1)
        .clock_device(ClockDevice::Epoll)
        .start_paused(true)
        .tokio_context(false)
        .build()
        .expect("a paused runtime");
    paused.block_on(async {
        let start = tickless::time::Instant::now();
        sleep(Duration::from_secs(3600)).await;
        assert!(start.elapsed() >= Duration::from_secs(3600));
    });
    // A core of its own thread (not the caller's) sleeps on its epoll wait too.
    let rt = Builder::new()
        .cores(2)
        .clock_device(ClockDevice::Epoll)
        .tokio_context(false)
        .build()
        .expect("a two-core runtime");
    let done = rt.block_on(async {
        rt.handle(1)
            .spawn(async {
                exact(Duration::from_millis(2)).await;
                (tickless::core_id(), timer_slack())
            })
            .await
    });
    assert_eq!(
        done.expect("the task does not panic"),
        (1, 1),
        "core 1's thread sleeps on its epoll wait with a 1 ns kernel slack"
    );
}

#[test]
fn the_epoll_device_waits_out_a_huge_deadline_as_no_deadline() {
    // A deadline centuries away becomes an epoll_pwait2 timeout the kernel clamps, not an
    // error: the core parks on it, and is woken by other work.
    let rt = runtime(ClockDevice::Epoll);
    let before = rt.stats().total;
    let woke = rt.block_on(async {
        let far = tickless::spawn_local(async {
            sleep(Duration::from_secs(u64::MAX / 4)).await;
        });
        // The far sleep registers (the only timer); the core then parks with only its
        // deadline armed, and another thread wakes it.
        tickless::yield_now().await;
        tickless::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(5)))
            .await
            .expect("the blocking job does not panic");
        exact(Duration::from_millis(1)).await;
        far.abort();
        "woken"
    });
    assert_eq!(woke, "woken");
    let stats = rt.stats().total - before;
    assert!(
        stats.parks >= 2,
        "parked on the far deadline, then on the near one: {stats:?}"
    );
}

/// The audit architecture of the target, which a seccomp filter checks before it reads a
/// system call number (`AUDIT_ARCH_*` in linux/audit.h).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// Installs on the calling thread alone (and the threads it starts later) a seccomp filter
/// that fails `epoll_pwait2` with `EPERM` and allows everything else, as a filter written
/// before the call existed does.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn refuse_epoll_pwait2_on_this_thread() {
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |k: u32, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt: 0,
        jf,
        k,
    };
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let ret = libc::BPF_RET | libc::BPF_K;
    // struct seccomp_data: the call's number at offset 0, the architecture at 4.
    let mut filter = [
        stmt(load, 4),
        jump(AUDIT_ARCH, 3), // another architecture: allow
        stmt(load, 0),
        jump(libc::SYS_epoll_pwait2 as u32, 1), // another call: allow
        stmt(ret, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        stmt(ret, libc::SECCOMP_RET_ALLOW),
    ];
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes no pointers; it lets an unprivileged thread install a
    // filter.
    let rc = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    // SAFETY: `program` points at `filter`, both alive for the call, which copies them; without
    // SECCOMP_FILTER_FLAG_TSYNC (not passable through prctl) only this thread is filtered.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            std::ptr::from_ref(&program),
        )
    };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn the_epoll_device_falls_back_to_the_timerfd_where_a_seccomp_filter_refuses_epoll_pwait2() {
    std::thread::spawn(|| {
        refuse_epoll_pwait2_on_this_thread();
        // The filter answers before the kernel would (a bad descriptor would be EBADF).
        // SAFETY: null pointers with a bad descriptor: the call fails before reading anything.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                -1,
                std::ptr::null_mut::<libc::epoll_event>(),
                1,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        assert_eq!(
            (rc, std::io::Error::last_os_error().raw_os_error()),
            (-1, Some(libc::EPERM))
        );
        let rt = Builder::new()
            .cores(1)
            .clock_device(ClockDevice::Epoll)
            .tokio_context(false)
            .build()
            .expect("a runtime whose core uses the timerfd instead");
        let stats = sequential_sleeps(&rt, 3);
        assert_eq!(stats.timer_fires, 3);
        assert!(
            stats.timerfd_rearms >= 3,
            "the core sleeps on a timerfd: {stats:?}"
        );
    })
    .join()
    .expect("the filtered thread's assertions hold");
}
