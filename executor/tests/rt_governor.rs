//! The idle governor's decisions, by its counters: it never spins on an idle runtime, it learns
//! to spin where its wakeups come at once (a same-core ping-pong, whose next message is already
//! in the pipe when the core goes idle), and the settings that turn it off or replace it do.
//! What it buys in time is measured by `compare` and the `pingpong` example, not here.

use std::io;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::io::pipe;
use tickless::{Builder, CoreStats, Runtime};

/// `n` round trips of a 4-byte counter between two tasks of core 0 over two pipes. Returns the
/// runtime's total counters.
fn pingpong(rt: &Runtime, n: u32) -> io::Result<CoreStats> {
    rt.block_on(async move {
        let (mut to_b, mut from_a) = pipe()?;
        let (mut to_a, mut from_b) = pipe()?;
        let b = tickless::spawn_local(async move {
            let mut buf = [0u8; 4];
            for _ in 0..n {
                from_a.read_exact(&mut buf).await?;
                to_a.write_all(&buf).await?;
            }
            io::Result::Ok(())
        });
        let mut buf = [0u8; 4];
        for i in 0..n {
            to_b.write_all(&i.to_le_bytes()).await?;
            from_b.read_exact(&mut buf).await?;
        }
        b.await.expect("task b")?;
        io::Result::Ok(())
    })?;
    Ok(rt.stats().total)
}

const MESSAGES: u32 = 2_000;

#[test]
fn a_same_core_ping_pong_teaches_the_governor_to_spin_and_its_spins_catch_every_message(
) -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    let s = pingpong(&rt, MESSAGES)?;
    // Each idle transition finds the next message already written: after two short parks the
    // governor spins, and the spin's first poll catches it. A park in between (the machine
    // stalled the thread for more than the cap) restarts the learning, so not every one.
    assert!(
        s.governor_caught > u64::from(MESSAGES),
        "spins caught {} of about {} idle transitions: {s:?}",
        s.governor_caught,
        2 * MESSAGES
    );
    assert!(s.parks < u64::from(MESSAGES) / 2, "{s:?}");
    assert!(s.governor_caught <= s.governor_spins, "{s:?}");
    Ok(())
}

#[test]
fn with_the_governor_off_every_idle_transition_parks() -> io::Result<()> {
    // No tokio context: a park in tokio's reactor is not counted in `parks`.
    let rt = Builder::new()
        .cores(1)
        .idle_governor(false)
        .tokio_context(false)
        .build()?;
    let s = pingpong(&rt, MESSAGES)?;
    assert_eq!((s.governor_spins, s.governor_caught, s.spins), (0, 0, 0));
    assert!(s.parks >= u64::from(MESSAGES), "{s:?}");
    Ok(())
}

#[test]
fn a_fixed_spin_window_replaces_the_governor() -> io::Result<()> {
    let rt = Builder::new()
        .cores(1)
        .spin_before_park(Duration::from_micros(20))
        .build()?;
    let s = pingpong(&rt, MESSAGES)?;
    assert_eq!((s.governor_spins, s.governor_window_ns), (0, 0), "{s:?}");
    assert!(s.spins > 0, "{s:?}");
    Ok(())
}

#[test]
fn an_idle_runtime_never_spins() -> io::Result<()> {
    // Core 0 sleeps 20 ms three times; core 1 has nothing to do at all. Every idle transition
    // is long: neither core ever starts a window.
    let rt = Builder::new().cores(2).build()?;
    rt.block_on(async {
        for _ in 0..3 {
            tickless::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let stats = rt.stats();
    for core in &stats.cores {
        assert_eq!(
            (core.governor_spins, core.governor_window_ns),
            (0, 0),
            "{core:?}"
        );
    }
    Ok(())
}

/// `n` round trips between core 0 (the `block_on` future) and a task on core 1, over two
/// pipes. Returns each core's counters.
fn cross_core_pingpong(rt: &Runtime, n: u32) -> io::Result<Vec<CoreStats>> {
    let (mut to_b, mut from_a) = pipe()?;
    let (mut to_a, mut from_b) = pipe()?;
    let echo = rt.handle(1).spawn(async move {
        let mut buf = [0u8; 4];
        for _ in 0..n {
            from_a.read_exact(&mut buf).await?;
            to_a.write_all(&buf).await?;
        }
        io::Result::Ok(())
    });
    rt.block_on(async move {
        let mut buf = [0u8; 4];
        for i in 0..n {
            to_b.write_all(&i.to_le_bytes()).await?;
            from_b.read_exact(&mut buf).await?;
        }
        echo.await.expect("echo task")
    })?;
    Ok(rt.stats().cores)
}

#[test]
fn two_cores_on_one_cpu_back_off_whether_their_spins_catch_or_expire() -> io::Result<()> {
    // Threads not pinned, but the thread that builds the runtime (core 0, and core 1's thread,
    // which inherits its affinity) may run on one CPU only: the two cores always share it, as
    // when the kernel wakes one onto the other's CPU. A spin there holds off the core whose
    // answer it waits for; the ones that catch it do so only because the kernel preempted them.
    // Each such spin the governor sees, caught or expired, starts a cool-down twice as long as
    // the last (8, 16, ... 1,024 parks), so over 4,000 idle transitions a core can see at most
    // 10 of them. (When catches reset the cool-down to 8, the echo core saw 237-324, and spun
    // in 14-21% of its transitions.) And every spin is one it sees: a governor doubts from its
    // first spin until one catches on a CPU of its own, so its first catches are asked where
    // they ran too. (When only an expired spin started the doubt, the echo core's first spins
    // all caught, each because the kernel preempted it, and went unseen: 11-435 spins in
    // 4,000 transitions.)
    const N: u32 = 4_000;
    std::thread::spawn(|| {
        let one = tickless_io::internal::cpu::allowed_cpus()?[0];
        tickless_io::internal::cpu::pin_current_thread(one)?;
        // The governor alone: core 1 must not step back from the crowded CPU (which would
        // make the ping-pong a same-core one).
        let rt = Builder::new().cores(2).yield_when_crowded(false).build()?;
        let cores = cross_core_pingpong(&rt, N)?;
        for (i, s) in cores.iter().enumerate() {
            assert!(
                s.governor_crowded <= 10,
                "core {i}: {} spins on a shared CPU: {s:?}",
                s.governor_crowded
            );
            assert!(
                s.governor_spins <= 10,
                "core {i}: {} spins in {} idle transitions, {} seen on a shared CPU: {s:?}",
                s.governor_spins,
                s.idles,
                s.governor_crowded
            );
        }
        io::Result::Ok(())
    })
    .join()
    .expect("test thread")
}

#[test]
fn pinned_cores_never_ask_where_they_ran() -> io::Result<()> {
    // A pinned runtime's cores have a CPU each: no spin is ever counted as sharing one.
    if tickless_io::internal::cpu::allowed_cpus()?.len() < 2 {
        return Ok(());
    }
    let rt = Builder::new().cores(2).pin(true).build()?;
    for s in cross_core_pingpong(&rt, MESSAGES)? {
        assert_eq!(s.governor_crowded, 0, "{s:?}");
    }
    Ok(())
}

/// `n` sleeps of `d` with `slack`, one after another, on core 0. Returns the core's counters.
fn sleeps(rt: &Runtime, n: u32, d: Duration, slack: Duration) -> CoreStats {
    let before = rt.stats().total;
    rt.block_on(async move {
        for _ in 0..n {
            tickless::time::sleep(d).slack(slack).await;
        }
    });
    rt.stats().total - before
}

const SLEEPS: u32 = 300;

#[test]
fn no_spin_goes_toward_a_timer_whose_slack_covers_a_park() -> io::Result<()> {
    // A spin window far longer than each sleep: every idle transition's next timer ends inside
    // it. Its slack (40 µs) covers a park's wakeup, so the core parks, armed for the window's
    // end, instead of spinning toward it.
    // No wakeup lead: a loaded machine teaches a core a lead of up to 100 µs, and a lead
    // longer than the slack makes the spin pay (the rule's other side).
    let rt = Builder::new()
        .cores(1)
        .spin_before_park(Duration::from_millis(10))
        .wakeup_lead_max(Duration::ZERO)
        .tokio_context(false)
        .build()?;
    let s = sleeps(
        &rt,
        SLEEPS,
        Duration::from_micros(10),
        Duration::from_micros(40),
    );
    // All but a few (a wakeup that came ahead of its timer by the lead is waited out awake).
    let most = u64::from(SLEEPS) * 9 / 10;
    assert!(s.slack_parks >= most, "{s:?}");
    assert!(s.parks >= most, "{s:?}");
    assert!(s.timer_fires >= u64::from(SLEEPS), "{s:?}");
    Ok(())
}

#[test]
fn a_timer_without_slack_is_still_spun_to() -> io::Result<()> {
    let rt = Builder::new()
        .cores(1)
        .spin_before_park(Duration::from_millis(10))
        .tokio_context(false)
        .build()?;
    let s = sleeps(&rt, SLEEPS, Duration::from_micros(30), Duration::ZERO);
    assert_eq!(s.slack_parks, 0, "{s:?}");
    // Each sleep is spun to: a park could come only from the spin's end, 10 ms later than any.
    assert!(s.parks < u64::from(SLEEPS) / 10, "{s:?}");
    Ok(())
}

#[test]
fn the_governor_parks_instead_of_spinning_toward_a_timer_with_slack() -> io::Result<()> {
    // Short idles teach the governor to spin, its window doubling while its spins expire;
    // once the window reaches past a sleep's (1 µs and 30 µs of slack), the core parks for
    // it instead of spinning to it.
    // No wakeup lead, as above: a park's wakeup is then taken as 20 µs, under the slack.
    let rt = Builder::new()
        .cores(1)
        .wakeup_lead_max(Duration::ZERO)
        .tokio_context(false)
        .build()?;
    let s = sleeps(
        &rt,
        SLEEPS,
        Duration::from_micros(1),
        Duration::from_micros(30),
    );
    // A look at the transition's start may still catch a timer already due (the thread was
    // kept off its CPU past it): a few. Spinning toward the timers caught nearly all of them.
    assert!(s.governor_caught < u64::from(SLEEPS) / 10, "{s:?}");
    if s.governor_spins > 0 && s.governor_window_ns > 31_000 {
        assert!(s.slack_parks > 0, "{s:?}");
    }
    Ok(())
}
