//! The default slack: a share of a timer's length that grows with it (`length² / 2 ms`, at most
//! 1,024 µs), so that timers whose windows overlap fire on one wakeup, taken at the end of the
//! earliest window; exact when a timer or the runtime asks for zero.
//!
//! Counted under the paused clock, which jumps from one expiry instant to the next: the
//! distinct instants timers fire at are the wakeups a real clock would need. Nothing here reads
//! wall time.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use tickless::runtime::{DEFAULT_SLACK_KNEE, DEFAULT_SLACK_MAX};
use tickless::time::{sleep, sleep_until, timeout, Instant};
use tickless::{spawn_local, yield_now, Builder, Runtime};

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// How each timer of a batch is made.
#[derive(Debug, Clone, Copy)]
enum Make {
    /// `sleep(d)`: the length is known.
    Sleep,
    /// `sleep_until(now + d)`: the core works the length out.
    SleepUntil,
    /// `timeout(d, pending)`.
    Timeout,
    /// `sleep(d).slack(Duration::ZERO)`: exact.
    Exact,
}

/// Starts one task per length at the same paused instant, each waiting `length` as `make`
/// says; returns how late each fired (by the paused clock) and the distinct instants they
/// fired at, which are the wakeups they took.
fn fire(rt: &Runtime, lengths: &[Duration], make: Make) -> (Vec<Duration>, usize) {
    rt.block_on(async {
        let start = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let tasks: Vec<_> = lengths
            .iter()
            .map(|&d| {
                let log = log.clone();
                spawn_local(async move {
                    match make {
                        Make::Sleep => sleep(d).await,
                        Make::SleepUntil => sleep_until(start + d).await,
                        Make::Timeout => {
                            let r = timeout(d, std::future::pending::<()>()).await;
                            assert!(r.is_err());
                        }
                        Make::Exact => sleep(d).slack(Duration::ZERO).await,
                    }
                    log.borrow_mut().push((d, Instant::now() - start));
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let log = log.take();
        let instants: BTreeSet<Duration> = log.iter().map(|&(_, at)| at).collect();
        (log.iter().map(|&(d, at)| at - d).collect(), instants.len())
    })
}

/// 20 timers between 20.48 ms and 21.44 ms: all inside the first one's 1,024 µs window
/// (20,481 µs to 21,505 µs).
fn one_window() -> Vec<Duration> {
    (0..20).map(|i| us(20_480 + 1 + i * 50)).collect()
}

fn paused() -> io::Result<Runtime> {
    Builder::new().cores(1).start_paused(true).build()
}

#[test]
fn the_default_grows_to_1024_us_from_1_43_ms() {
    assert_eq!(DEFAULT_SLACK_KNEE, Duration::from_millis(2));
    assert_eq!(DEFAULT_SLACK_MAX, us(1_024));
}

#[test]
fn long_timers_in_one_window_share_one_wakeup_however_they_are_made() -> io::Result<()> {
    let rt = paused()?;
    for make in [Make::Sleep, Make::SleepUntil, Make::Timeout] {
        let (late, wakeups) = fire(&rt, &one_window(), make);
        assert_eq!(wakeups, 1, "{make:?}: {late:?}");
        // Never early, never later than the cap (the first timer's window decides the wakeup:
        // it is the one that late).
        assert_eq!(late[0], DEFAULT_SLACK_MAX, "{make:?}");
        assert!(
            late.iter().all(|&l| l <= DEFAULT_SLACK_MAX),
            "{make:?}: {late:?}"
        );
    }
    Ok(())
}

#[test]
fn an_exact_timer_fires_at_its_deadline_with_a_wakeup_of_its_own() -> io::Result<()> {
    let rt = paused()?;
    let (late, wakeups) = fire(&rt, &one_window(), Make::Exact);
    assert_eq!(wakeups, 20);
    assert!(late.iter().all(|l| l.is_zero()), "{late:?}");
    Ok(())
}

#[test]
fn a_zero_default_makes_every_timer_exact() -> io::Result<()> {
    let rt = Builder::new()
        .cores(1)
        .start_paused(true)
        .default_slack(Duration::ZERO)
        .build()?;
    for make in [Make::Sleep, Make::SleepUntil, Make::Timeout] {
        let (late, wakeups) = fire(&rt, &one_window(), make);
        assert_eq!(wakeups, 20, "{make:?}");
        assert!(late.iter().all(|l| l.is_zero()), "{make:?}: {late:?}");
    }
    Ok(())
}

#[test]
fn a_short_sleep_keeps_its_precision() -> io::Result<()> {
    let rt = paused()?;
    // 100 µs: 100² / 2,000 is 5 µs, rounded down to 1,024 µs / 2^8 = 4 µs of slack.
    let lengths: Vec<Duration> = (0..8)
        .map(|i| us(100) + Duration::from_nanos(i * 500))
        .collect();
    let (late, wakeups) = fire(&rt, &lengths, Make::Sleep);
    assert!(late.iter().all(|&l| l <= us(4)), "{late:?}");
    // 100 to 103.5 µs: all due by 104 µs, the end of the first one's window (a 4 µs grid
    // would have taken two wakeups, at 100 and 104 µs).
    assert_eq!(wakeups, 1, "{late:?}");
    // Longer ones, 108 to 111.5 µs, are not taken early by the first wakeup: a second one.
    let lengths: Vec<Duration> = (0..16)
        .map(|i| us(100 + (i / 8) * 8) + Duration::from_nanos((i % 8) * 500))
        .collect();
    let (late, wakeups) = fire(&rt, &lengths, Make::Sleep);
    assert!(late.iter().all(|&l| l <= us(4)), "{late:?}");
    assert_eq!(wakeups, 2, "{late:?}");
    Ok(())
}

#[test]
fn a_fine_timer_s_wakeup_serves_a_coarse_one() -> io::Result<()> {
    let rt = paused()?;
    let instants = rt.block_on(async {
        let start = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        // A long sleep: past 1.43 ms, the cap: due at 20,000 µs, by 21,024 µs.
        let long = {
            let log = log.clone();
            spawn_local(async move {
                sleep(us(20_000)).await;
                log.borrow_mut().push(Instant::now() - start);
            })
        };
        // A short one made at 19,500 µs: 960² / 2,000 = 461 µs, rounded down to 1,024 / 2^2 =
        // 256 µs: due at 20,460 µs, by 20,716 µs, the earliest end of a window: the wakeup
        // there takes the long one too, due since 20,000 µs.
        let short = {
            let log = log.clone();
            spawn_local(async move {
                sleep(us(19_500)).slack(Duration::ZERO).await;
                log.borrow_mut().push(Instant::now() - start);
                sleep(us(960)).await;
                log.borrow_mut().push(Instant::now() - start);
            })
        };
        long.await.unwrap();
        short.await.unwrap();
        log.take()
    });
    let mut sorted = instants.clone();
    sorted.sort();
    assert_eq!(sorted, [us(19_500), us(20_716), us(20_716)], "{instants:?}");
    Ok(())
}

#[test]
fn timers_in_one_window_cost_one_park_on_the_real_clock() -> io::Result<()> {
    // Real time: 20 sleeps 45 µs apart, all within 900 µs (two 1,024 µs windows of the grid at
    // most), wake the parked core at most twice and arm its timerfd at most twice, where exact
    // timers take a wakeup each. Counted in parks and re-arms, never timed.
    let rt = Builder::new().cores(1).build()?;
    let s0 = rt.stats().total;
    rt.block_on(async {
        let start = Instant::now() + Duration::from_millis(20);
        let tasks: Vec<_> = (0..20)
            .map(|i| spawn_local(sleep_until(start + us(i * 45))))
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    let s = rt.stats().total - s0;
    assert_eq!(s.timer_fires, 20, "{s:?}");
    assert!(s.parks <= 2, "{s:?}");
    assert!(s.timerfd_rearms <= 2, "{s:?}");
    Ok(())
}

/// Clock reads of a task that sleeps `n` times 200 µs with `sleep_until(Instant::now() + ..)`
/// (the length unknown to the runtime), on a real clock.
fn clock_reads_of_sleep_until_loop(rt: &Runtime, n: u32) -> u64 {
    let s0 = rt.stats().total;
    rt.block_on(async {
        for _ in 0..n {
            sleep_until(Instant::now() + us(200)).await;
        }
    });
    (rt.stats().total - s0).clock_reads
}

#[test]
fn a_sleep_until_woken_by_a_timer_learns_its_length_without_a_clock_read() -> io::Result<()> {
    // The default needs the time a `sleep_until` has left; a task a timer just woke takes it
    // from the reading that expired the timer, so that it reads the clock no more often than
    // with a fixed slack (which needs no length at all). A clock read per registration would
    // add one per sleep: 50 here. (No wakeup lead: a wakeup it brings early is waited out
    // reading the clock, as many times as the wait takes.)
    let growing = Builder::new()
        .cores(1)
        .wakeup_lead_max(Duration::ZERO)
        .build()?;
    let fixed = Builder::new()
        .cores(1)
        .wakeup_lead_max(Duration::ZERO)
        .default_slack(Duration::from_micros(4))
        .build()?;
    let n = 50;
    let (g, f) = (
        clock_reads_of_sleep_until_loop(&growing, n),
        clock_reads_of_sleep_until_loop(&fixed, n),
    );
    assert!(f >= u64::from(n), "at least each Instant::now: {f}");
    assert!(g <= f + 5, "default {g} clock reads, fixed slack {f}");
    Ok(())
}

#[test]
fn churning_timers_stay_within_their_slack_and_share_wakeups() -> io::Result<()> {
    // 200 tasks each sleep 20 times a pseudo-random 1-100 ms (as `compare`'s timer_churn), on
    // the paused clock: every sleep completes within its slack (at most 1,024 µs late), and
    // the distinct instants they complete at, the wakeups, are far fewer than the sleeps.
    let rt = paused()?;
    let (fires, late, instants) = rt.block_on(async {
        let log = Rc::new(RefCell::new(Vec::new()));
        let tasks: Vec<_> = (0..200u64)
            .map(|i| {
                let log = log.clone();
                spawn_local(async move {
                    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    for _ in 0..20 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let deadline = Instant::now() + us(1_000 + x % 99_001);
                        sleep_until(deadline).await;
                        let now = Instant::now();
                        log.borrow_mut().push((now - deadline, now));
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let log = log.take();
        let instants: BTreeSet<Instant> = log.iter().map(|&(_, at)| at).collect();
        let late = log.iter().map(|&(l, _)| l).max().unwrap();
        (log.len(), late, instants.len())
    });
    assert_eq!(fires, 4_000);
    assert!(late <= DEFAULT_SLACK_MAX, "{late:?}");
    // 4,000 deadlines over about a second. Waking at the end of the earliest window takes 917
    // wakeups here; rounding deadlines up to a 1,024 µs grid took 1,127 (one per grid point
    // that any deadline fell before).
    assert!(instants < 1_000, "{instants} wakeups for {fires} sleeps");
    Ok(())
}

#[test]
fn a_short_sleep_until_keeps_its_precision_after_long_timers_shared_a_slack() -> io::Result<()> {
    // The long timers' slack is prepared once and reused; a deadline made with `sleep_until`
    // (no length known) that is close gets its own small slack all the same.
    let rt = paused()?;
    let (late, _) = fire(&rt, &one_window(), Make::Timeout);
    assert_eq!(late[0], DEFAULT_SLACK_MAX);
    let (late, _) = fire(&rt, &[us(100)], Make::SleepUntil);
    assert!(late[0] <= us(4), "{late:?}");
    Ok(())
}

#[test]
fn a_sleep_until_right_after_an_advance_takes_its_slack_from_the_paused_clock() -> io::Result<()> {
    // The loop's last reading is from before the advance: paused time reads the clock itself
    // (for free, exactly), so the 100 µs left give a 100 µs timer's slack, not 10 s's.
    let rt = paused()?;
    let late = rt.block_on(async {
        let _pending = spawn_local(sleep(Duration::from_secs(3600)));
        yield_now().await;
        tickless::time::advance(Duration::from_secs(10)).await;
        let start = Instant::now();
        sleep_until(start + us(100)).await;
        start.elapsed() - us(100)
    });
    assert!(late <= us(4), "{late:?}");
    Ok(())
}
