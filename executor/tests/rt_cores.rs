//! Thread per core: cross-core ping-pong, remote spawns and their wakes (counted), spins,
//! shutdown, and a panic on one core leaving the other running.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::io::{PipeReader, PipeWriter};
use tickless::time::{sleep, sleep_until, Instant};
use tickless::{Builder, Runtime};

fn two_cores() -> io::Result<Runtime> {
    Builder::new().cores(2).build()
}

/// Two cores with nothing but the test to wake them: no stall detector, whose watchdog may
/// wake a sleeping core for its own duties (a harvest nudge, a step back from crowded CPUs,
/// which a loaded CI machine can trigger), for the tests that count a core's parks.
fn two_cores_unwatched() -> io::Result<Runtime> {
    Builder::new().cores(2).stall_threshold(None).build()
}

/// Waits (really) until core 1 has published that it sleeps.
fn wait_parked(rt: &Runtime) {
    let h = rt.handle(1);
    for _ in 0..100_000 {
        if h.is_parked() {
            return;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    panic!("core 1 never went to sleep");
}

fn std_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = std::io::pipe()?;
    Ok((OwnedFd::from(r), OwnedFd::from(w)))
}

/// `n` round trips of a counter between core 0 and core 1 over two pipes.
fn cross_core_pingpong(rt: &Runtime, n: u32) -> io::Result<()> {
    let (a_r, b_w) = std_pipe()?; // core 1 -> core 0
    let (b_r, a_w) = std_pipe()?; // core 0 -> core 1
    let echo = rt.handle(1).spawn_pinned(move || async move {
        assert_eq!(tickless::core_id(), 1);
        let mut r = PipeReader::from_owned_fd(b_r)?;
        let mut w = PipeWriter::from_owned_fd(b_w)?;
        let mut buf = [0u8; 4];
        for i in 0..n {
            r.read_exact(&mut buf).await?;
            assert_eq!(u32::from_le_bytes(buf), i, "core 1 read a wrong message");
            w.write_all(&(i ^ 0xA5A5_A5A5).to_le_bytes()).await?;
        }
        io::Result::Ok(())
    });
    rt.block_on(async move {
        assert_eq!(tickless::core_id(), 0);
        let mut r = PipeReader::from_owned_fd(a_r)?;
        let mut w = PipeWriter::from_owned_fd(a_w)?;
        let mut buf = [0u8; 4];
        for i in 0..n {
            w.write_all(&i.to_le_bytes()).await?;
            r.read_exact(&mut buf).await?;
            assert_eq!(
                u32::from_le_bytes(buf),
                i ^ 0xA5A5_A5A5,
                "core 0 read a wrong reply"
            );
        }
        echo.await?
    })
}

#[test]
fn pipe_pingpong_across_cores() -> io::Result<()> {
    let rt = two_cores()?;
    cross_core_pingpong(&rt, 5_000)?;
    let s = rt.stats();
    assert_eq!(s.cores.len(), 2);
    Ok(())
}

#[test]
fn pipe_pingpong_across_cores_spinning() -> io::Result<()> {
    let rt = Builder::new()
        .cores(2)
        .spin_before_park(Duration::from_micros(50))
        .build()?;
    cross_core_pingpong(&rt, 2_000)?;
    assert!(rt.stats().total.spins > 0);
    Ok(())
}

#[test]
fn remote_spawn_at_later_than_the_armed_wakeup_never_wakes_the_core() -> io::Result<()> {
    let rt = two_cores_unwatched()?;
    // Core 1 sleeps with its timerfd armed 1 h out.
    let hour = rt
        .handle(1)
        .spawn(async { sleep(Duration::from_secs(3600)).await });
    wait_parked(&rt);
    let before = rt.stats().cores[1];
    let ran = Arc::new(AtomicUsize::new(0));
    let later = Instant::now() + Duration::from_secs(7200);
    let handles: Vec<_> = (0..10_000)
        .map(|_| {
            let ran = ran.clone();
            rt.handle(1).spawn_at(later, async move {
                ran.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect();
    wait_parked(&rt);
    let after = rt.stats().cores[1];
    assert_eq!(after.remote_wakes_sent - before.remote_wakes_sent, 0);
    assert_eq!(
        after.remote_wakes_avoided - before.remote_wakes_avoided,
        10_000
    );
    assert_eq!(after.parks, before.parks, "core 1 never woke");
    assert_eq!(ran.load(Ordering::Relaxed), 0);
    hour.abort();
    for h in handles {
        h.abort();
    }
    Ok(())
}

#[test]
fn remote_spawn_at_programs_the_sleeping_core_s_timerfd_per_shrink_and_never_wakes_it(
) -> io::Result<()> {
    let rt = two_cores_unwatched()?;
    let _hour = rt
        .handle(1)
        .spawn(async { sleep(Duration::from_secs(3600)).await });
    wait_parked(&rt);
    let before = rt.stats().cores[1];
    // Each deadline is earlier than the last: each shrinks the sleep of a sleeping core.
    let start = Instant::now();
    let mut handles = Vec::new();
    for i in 0..20u64 {
        let deadline = start + Duration::from_secs(3000 - i * 100);
        handles.push(rt.handle(1).spawn_at(deadline, async {}));
        wait_parked(&rt);
    }
    let after = rt.stats().cores[1];
    // Each shrink programmed core 1's timerfd from this thread: no eventfd write, and the core
    // slept through all twenty (it wakes once, at the earliest deadline).
    assert_eq!(after.remote_arms - before.remote_arms, 20);
    assert_eq!(after.remote_wakes_sent - before.remote_wakes_sent, 0);
    assert_eq!(after.parks - before.parks, 0);

    // While core 1 runs (a task spinning on a flag), no hand-over wakes it.
    let stop = Arc::new(AtomicBool::new(false));
    let running = Arc::new(AtomicBool::new(false));
    let (s, r) = (stop.clone(), running.clone());
    let spinner = rt.handle(1).spawn(async move {
        r.store(true, Ordering::Release);
        while !s.load(Ordering::Acquire) {
            std::hint::spin_loop();
        }
    });
    while !running.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    let before = rt.stats().cores[1];
    for i in 0..1_000u64 {
        let deadline = start + Duration::from_secs(10) + Duration::from_micros(i);
        handles.push(rt.handle(1).spawn_at(deadline, async {}));
    }
    stop.store(true, Ordering::Release);
    spinner.join().expect("spinner");
    wait_parked(&rt);
    let after = rt.stats().cores[1];
    assert_eq!(after.remote_wakes_sent - before.remote_wakes_sent, 0);
    assert_eq!(
        after.remote_wakes_avoided - before.remote_wakes_avoided,
        1_000
    );
    for h in handles {
        h.abort();
    }
    Ok(())
}

/// Every remote spawn is counted once, as a wake sent or avoided, and a sleeping core is woken
/// at least once. How many of a burst find the core still asleep depends on scheduling (the
/// core may go back to sleep between two spawns on a loaded machine); that a burst racing one
/// sleep makes exactly one wake is checked by the loom models of the hand-over.
#[test]
fn remote_spawns_are_each_counted_once_as_a_wake_sent_or_avoided() -> io::Result<()> {
    let rt = two_cores()?;
    wait_parked(&rt);
    let before = rt.stats().cores[1];
    let handles: Vec<_> = (0..100)
        .map(|i| rt.handle(1).spawn(async move { i }))
        .collect();
    let sum: i32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, (0..100).sum());
    let after = rt.stats().cores[1];
    let sent = after.remote_wakes_sent - before.remote_wakes_sent;
    let avoided = after.remote_wakes_avoided - before.remote_wakes_avoided;
    assert!(sent >= 1, "the sleeping core was never woken");
    assert_eq!(sent + avoided, 100);
    Ok(())
}

#[test]
fn join_handles_across_threads() -> io::Result<()> {
    let rt = two_cores()?;
    let on_1 = rt.handle(1).spawn(async {
        sleep(Duration::from_millis(1)).await;
        tickless::core_id()
    });
    // Awaited from core 0.
    assert_eq!(rt.block_on(on_1)?, 1);
    // Joined from a plain thread.
    let on_1 = rt.handle(1).spawn(async { 7 });
    let t = std::thread::spawn(move || on_1.join().unwrap());
    assert_eq!(t.join().unwrap(), 7);
    // Dropped on another thread: detached, still runs.
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let h = rt
        .handle(1)
        .spawn(async move { r.store(true, Ordering::Release) });
    std::thread::spawn(move || drop(h)).join().unwrap();
    rt.block_on(async {
        while !ran.load(Ordering::Acquire) {
            sleep(Duration::from_micros(100)).await;
        }
    });
    Ok(())
}

#[test]
fn a_sleep_dropped_on_another_thread_cancels_through_the_inbox() -> io::Result<()> {
    let rt = two_cores()?;
    // Core 1 registers a sleep and sends it back, pending.
    let (tx, rx) = std::sync::mpsc::channel();
    rt.handle(1).spawn(async move {
        let mut s = sleep(Duration::from_secs(3600));
        futures_lite::future::poll_once(&mut s).await;
        tx.send(s).unwrap();
    });
    let s = rx.recv().unwrap();
    wait_parked(&rt);
    let before = rt.stats().cores[1];
    drop(s); // on this thread: a cancel handed to core 1, which sleeps on
    let after = rt.stats().cores[1];
    assert_eq!(after.remote_wakes_sent, before.remote_wakes_sent);
    // The cancel is applied when core 1 next wakes.
    rt.handle(1).spawn(async {}).join().unwrap();
    wait_parked(&rt);
    assert_eq!(rt.stats().cores[1].timer_cancels, before.timer_cancels + 1);
    Ok(())
}

#[test]
fn a_panic_on_one_core_leaves_the_others_running() -> io::Result<()> {
    let rt = two_cores()?;
    let boom = rt.handle(1).spawn(async { panic!("boom on core 1") });
    assert!(boom.join().unwrap_err().is_panic());
    assert_eq!(rt.handle(1).spawn(async { 5 }).join().unwrap(), 5);
    assert_eq!(rt.block_on(async { 6 }), 6);
    Ok(())
}

#[test]
fn shutdown_drops_every_core_s_tasks_on_their_core() -> io::Result<()> {
    struct Guard(Arc<AtomicUsize>);
    impl Drop for Guard {
        fn drop(&mut self) {
            // Dropped on a core (the one it lives on now: core 0's moved to core 1 when the
            // `block_on` below returned), with the runtime current on this thread.
            assert!(tickless::core_id() < 2);
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let rt = two_cores()?;
    let drops = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for core in 0..2 {
        for _ in 0..500 {
            let d = drops.clone();
            handles.push(rt.handle(core).spawn(async move {
                let _g = Guard(d);
                sleep(Duration::from_secs(3600)).await;
            }));
        }
    }
    // Let them all start.
    rt.block_on(sleep(Duration::from_millis(20)));
    rt.shutdown(Duration::from_secs(10)).expect("no core stuck");
    assert_eq!(drops.load(Ordering::Relaxed), 1_000);
    for h in handles {
        assert!(h.join().unwrap_err().is_cancelled());
    }
    Ok(())
}

#[test]
fn shutdown_reports_a_core_stuck_in_a_task() -> io::Result<()> {
    let rt = two_cores()?;
    let release = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicBool::new(false));
    let (r, s) = (release.clone(), started.clone());
    rt.handle(1).spawn(async move {
        s.store(true, Ordering::Release);
        // Never yields until released.
        while !r.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    while !started.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    let err = rt.shutdown(Duration::from_millis(50)).unwrap_err();
    assert_eq!(err.stuck, vec![1]);
    release.store(true, Ordering::Release);
    Ok(())
}

#[test]
fn pinning_names_the_cpu_it_cannot_use() {
    let allowed = tickless_io_cpus();
    let err = Builder::new()
        .cores(allowed + 1)
        .pin(true)
        .build()
        .unwrap_err();
    assert!(
        err.to_string().contains(&format!("core {allowed}")),
        "{err}"
    );
}

fn tickless_io_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn a_pinned_runtime_gives_the_thread_its_affinity_back() {
    std::thread::spawn(|| {
        let n = tickless_io_cpus().min(2);
        for _ in 0..2 {
            let rt = Builder::new()
                .cores(n)
                .pin(true)
                .build()
                .expect("pinned build");
            assert_eq!(rt.cores(), n);
        }
    })
    .join()
    .unwrap();
}

#[test]
fn an_idle_spin_with_nothing_to_find_ends_in_a_park() -> std::io::Result<()> {
    // A 50 µs spin window and a 100 ms sleep: the core spins once (no I/O, no work, the timer
    // not close), then parks on its timerfd, rather than spinning until the timer.
    let rt = tickless::Builder::new()
        .cores(1)
        .spin_before_park(std::time::Duration::from_micros(50))
        .build()?;
    let before = rt.stats().total;
    rt.block_on(tickless::time::sleep(std::time::Duration::from_millis(100)));
    let d = rt.stats().total - before;
    assert!(d.spins >= 1, "{d:?}");
    assert!(d.parks >= 1, "the spin gave up and the core parked: {d:?}");
    assert!(
        d.spins <= d.parks + 1,
        "one spin per idle transition: {d:?}"
    );
    // The spin lasted its window, not until the timer: it reads the clock (and polls epoll)
    // once per round, a round is about a microsecond, so a 50 µs window holds tens of rounds
    // and 100 ms about a hundred thousand (a count, not a time: load makes fewer rounds).
    assert!(d.clock_reads < 5_000, "spun until the timer: {d:?}");
    Ok(())
}

#[test]
fn a_timer_closer_than_the_spin_window_is_spun_to_and_never_fired_early() -> std::io::Result<()> {
    // A 2 ms spin window and exact 100 µs sleeps (no wakeup lead, to see the governor alone):
    // each idle transition finds its timer within the window and spins to it, polling I/O,
    // instead of arming the device and parking; the timer is due when the spin ends.
    let rt = tickless::Builder::new()
        .cores(1)
        .spin_before_park(std::time::Duration::from_millis(2))
        .wakeup_lead_max(std::time::Duration::ZERO)
        .build()?;
    let before = rt.stats().total;
    rt.block_on(async {
        for i in 0..20 {
            let deadline = tickless::time::Instant::now() + std::time::Duration::from_micros(100);
            tickless::time::sleep_until(deadline)
                .slack(std::time::Duration::ZERO)
                .await;
            assert!(
                tickless::time::Instant::now() >= deadline,
                "sleep {i} ended early"
            );
        }
    });
    let d = rt.stats().total - before;
    assert_eq!(d.timer_fires, 20, "{d:?}");
    // Spun to every timer; a spin the kernel kept off its CPU past its 2 ms window ends in a
    // park (1 of 20, once, in a CI run with the machine loaded): with no spin, 20.
    assert!(d.parks <= 1, "spun to every timer: {d:?}");
    assert!(d.spins >= 20, "{d:?}");
    Ok(())
}

#[test]
fn each_idle_transition_without_a_spin_window_is_one_park_and_one_epoll_wait() -> std::io::Result<()>
{
    // No spin window (the default): an idle transition parks at once, polling I/O only to
    // park. The default wakeup lead is on, though, and the sleeps' windows (their default
    // slack, 16 µs for 200 µs) are narrower than a lead learned on a busy machine: the timerfd
    // may then expire ahead of a window with nothing due, and that transition waits out the
    // rest awake instead (a lead spin, no I/O poll). Each transition is one or the other.
    // No tokio context: a core parked in tokio polls its epoll after the park too.
    let rt = tickless::Builder::new()
        .cores(1)
        .tokio_context(false)
        .build()?;
    let before = rt.stats().total;
    rt.block_on(async {
        for _ in 0..10 {
            tickless::time::sleep(std::time::Duration::from_micros(200)).await;
        }
    });
    let d = rt.stats().total - before;
    assert_eq!(d.spins, d.lead_spins, "no spin window, no idle spin: {d:?}");
    assert!(
        d.lead_spins <= d.timer_early,
        "a lead spin follows an early expiry: {d:?}"
    );
    assert!(d.idles >= 10, "{d:?}");
    assert_eq!(
        d.parks + d.lead_spins,
        d.idles,
        "every idle transition parks, at once, or spins to its timer: {d:?}"
    );
    assert_eq!(d.io_polls, d.parks, "and polls I/O only to park: {d:?}");
    Ok(())
}

#[test]
// The sleep is handed out of one runtime's `block_on` on purpose.
#[allow(clippy::async_yields_async)]
fn a_sleep_of_one_runtime_dropped_inside_another_cancels_its_own_timer_only() -> io::Result<()> {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    // Two runtimes alive at once: each core 0 is told apart by its runtime's number, so a
    // sleep registered on one and dropped on the other's core travels home to be cancelled,
    // and never cancels the other's timer that happens to sit in the same slot.
    let a = Builder::new().cores(1).start_paused(true).build()?;
    let b = Builder::new().cores(1).start_paused(true).build()?;
    let theirs = a.block_on(async {
        let mut nap = Box::pin(sleep(Duration::from_secs(3600)));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(nap.as_mut().poll(&mut cx).is_pending());
        nap
    });
    let before = b.stats().cores[0];
    b.block_on(async move {
        let mut ours = Box::pin(sleep(Duration::from_secs(3600)));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(ours.as_mut().poll(&mut cx).is_pending());
        drop(theirs);
        assert!(matches!(ours.as_mut().poll(&mut cx), Poll::Pending));
    });
    let spent = b.stats().cores[0] - before;
    assert_eq!(spent.timer_inserts, 1);
    // Only its own sleep's cancel, at the end of `block_on`.
    assert_eq!(spent.timer_cancels, 1);
    // The other runtime cancels its timer when its core next runs.
    a.block_on(tickless::task::yield_now());
    assert_eq!(a.stats().cores[0].timer_cancels, 1);
    Ok(())
}

/// A timer follows the task that polls it: a `Sleep` first polled on core 0 and then awaited
/// by a task of core 1 registers on core 1's wheel, and its entry on core 0 is cancelled
/// through core 0's inbox; it fires once, on core 1. Counted, not timed.
#[test]
fn a_sleep_polled_on_another_core_moves_its_timer_there() -> io::Result<()> {
    let rt = two_cores()?;
    let before = rt.stats();
    let handle = rt.handle(1);
    rt.block_on(async move {
        // A deadline given: placed in core 0's wheel at its first poll (a sleep made for a
        // duration would wait there young, and its cancel count nothing).
        let at = Instant::now() + Duration::from_millis(20);
        let mut sleep = Box::pin(sleep_until(at));
        // Registered on core 0's wheel by this first poll.
        assert!(futures_lite::future::poll_once(sleep.as_mut())
            .await
            .is_none());
        handle
            .spawn(async move {
                sleep.await;
                tickless::core_id()
            })
            .await
    })
    .map(|core| assert_eq!(core, 1))
    .map_err(io::Error::other)?;
    // The cancel reached core 0's inbox before the sleep registered on core 1, so before the
    // task ended; `block_on` may have returned before core 0 took it: one turn takes it.
    rt.block_on(tickless::task::yield_now());
    wait_parked(&rt);
    let after = rt.stats();
    let (c0, c1) = (
        after.cores[0] - before.cores[0],
        after.cores[1] - before.cores[1],
    );
    assert_eq!(
        (c0.timer_inserts, c0.timer_cancels, c0.timer_fires),
        (1, 1, 0)
    );
    assert_eq!((c1.timer_inserts, c1.timer_fires), (1, 1));
    Ok(())
}

/// The same with a sleep made for a duration: young on core 0 (no deadline yet) until core 0
/// reads its clock, cancelled there through the inbox, and given its deadline on core 1 (from
/// a reading of core 1's, later than its creation: never early).
#[test]
fn a_young_sleep_polled_on_another_core_moves_there_and_leaves_nothing_behind() -> io::Result<()> {
    let rt = two_cores()?;
    let before = rt.stats();
    let handle = rt.handle(1);
    let start = Instant::now();
    let (core, done) = rt
        .block_on(async move {
            let mut sleep = Box::pin(sleep(Duration::from_millis(20)));
            assert!(futures_lite::future::poll_once(sleep.as_mut())
                .await
                .is_none());
            handle
                .spawn(async move {
                    sleep.await;
                    (tickless::core_id(), Instant::now())
                })
                .await
        })
        .map_err(io::Error::other)?;
    assert_eq!(core, 1);
    assert!(done >= start + Duration::from_millis(20), "never early");
    rt.block_on(tickless::task::yield_now());
    wait_parked(&rt);
    let after = rt.stats();
    let (c0, c1) = (
        after.cores[0] - before.cores[0],
        after.cores[1] - before.cores[1],
    );
    // Settled on core 0 if it read its clock before the cancel came (it parks meanwhile),
    // else dropped young there: cancelled either way, never fired.
    assert_eq!(c0.timer_inserts, c0.timer_cancels, "{c0:?}");
    assert_eq!(c0.timer_fires, 0);
    assert_eq!(
        after.cores[0].pending_timers, 0,
        "cancelled through the inbox"
    );
    assert_eq!((c1.timer_inserts, c1.timer_fires), (1, 1));
    Ok(())
}

/// Read on core 0's own thread inside `block_on`, core 0's counters are live, not as of its
/// last park: ten tasks polled in this turn show at once.
#[test]
fn core_zero_s_counters_read_in_its_block_on_are_live() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let before = rt.stats().cores[0].polls;
        let tasks: Vec<_> = (0..10).map(|_| tickless::spawn(async {})).collect();
        // The tasks run before this future is polled again, with no park in between.
        tickless::task::yield_now().await;
        let after = rt.stats().cores[0].polls;
        assert!(
            after >= before + 10,
            "core 0's own thread sees its live counters: {before} -> {after} polls"
        );
        for t in tasks {
            t.await.expect("a task");
        }
    });
    Ok(())
}
