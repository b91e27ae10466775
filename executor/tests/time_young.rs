//! Sleeps and timeouts made for a duration read no clock when they are made: the loop's next
//! reading gives every one first polled since its last its deadline (`docs/timers.md`, *One
//! clock read a turn*). Counted, not timed: clock reads and wheel inserts per poll, and no timer
//! completes before its creation plus its duration.

use std::future::{pending, poll_fn, Future};
use std::io;
use std::pin::{pin, Pin};
use std::task::Poll;
use std::time::Duration;

use proptest::prelude::*;
use tickless::time::{sleep, sleep_until, timeout, Instant, Sleep};
use tickless::{Builder, CoreStats, Runtime};

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// A one-core runtime that idles without spinning and without a wakeup lead: its idle path
/// reads the clock a fixed number of times a park.
fn plain() -> io::Result<Runtime> {
    Builder::new()
        .cores(1)
        .idle_governor(false)
        .spin_before_park(Duration::ZERO)
        .wakeup_lead_max(Duration::ZERO)
        .build()
}

/// Core 0's counters, read on its own thread (exact).
fn stats(rt: &Runtime) -> CoreStats {
    rt.stats().cores[0]
}

#[test]
fn timeouts_dropped_in_the_poll_that_made_them_read_no_clock_and_touch_no_wheel() -> io::Result<()>
{
    let rt = plain()?;
    let spent = rt.block_on(async {
        let before = stats(&rt);
        poll_fn(|cx| {
            for _ in 0..100 {
                // Registered (its future is pending), then answered: dropped in this poll.
                let mut t = pin!(timeout(Duration::from_secs(1), pending::<()>()));
                assert!(t.as_mut().poll(cx).is_pending());
            }
            Poll::Ready(())
        })
        .await;
        stats(&rt) - before
    });
    assert_eq!(
        (spent.clock_reads, spent.timer_inserts, spent.timer_cancels),
        (0, 0, 0),
        "one read and one insert a timeout before: {spent:?}"
    );
    assert_eq!(spent.pending_timers, 0);
    Ok(())
}

/// Makes `n` one-second timeouts in one poll and keeps them; then the core parks once (a
/// 1 ms `sleep_until`, whose deadline is given). The clock reads and inserts that cost.
fn kept_through_a_park(n: usize) -> io::Result<(u64, u64)> {
    let rt = plain()?;
    let mut kept: Vec<Pin<Box<_>>> = Vec::new();
    let spent = rt.block_on(async {
        let before = stats(&rt);
        poll_fn(|cx| {
            for _ in 0..n {
                let mut t = Box::pin(timeout(Duration::from_secs(1), pending::<()>()));
                assert!(t.as_mut().poll(cx).is_pending());
                kept.push(t);
            }
            Poll::Ready(())
        })
        .await;
        let wake = Instant::now() + Duration::from_millis(1);
        sleep_until(wake).slack(Duration::ZERO).await;
        stats(&rt) - before
    });
    drop(kept);
    Ok((spent.clock_reads, spent.timer_inserts))
}

#[test]
fn timeouts_kept_through_their_turn_share_one_clock_read() -> io::Result<()> {
    let (one_reads, one_inserts) = kept_through_a_park(1)?;
    let (many_reads, many_inserts) = kept_through_a_park(100)?;
    // Every kept timeout reaches the wheel (with the 1 ms sleep)...
    assert_eq!((one_inserts, many_inserts), (2, 101));
    // ...settled by a reading the idle path takes anyway: 100 timeouts read the clock as
    // often as one (a read each would be 99 more; a spurious wakeup of one run may add a few).
    assert!(
        many_reads <= one_reads + 3,
        "1 timeout: {one_reads} reads, 100: {many_reads}"
    );
    Ok(())
}

#[test]
fn a_sleep_reads_its_deadline_from_the_clock_once_it_is_asked() -> io::Result<()> {
    let rt = plain()?;
    rt.block_on(async {
        let start = Instant::now();
        let nap = sleep(Duration::from_secs(5));
        // Not polled: the duration from now, a lower bound of the deadline it will get.
        assert!(nap.deadline() >= start + Duration::from_secs(5));
        let mut nap = pin!(nap);
        poll_fn(|cx| {
            assert!(nap.as_mut().poll(cx).is_pending());
            Poll::Ready(())
        })
        .await;
        // Registered and asked: settled now, and kept.
        let first = nap.deadline();
        assert!(first >= start + Duration::from_secs(5));
        assert_eq!(nap.deadline(), first);
        // Rounded up to the timer resolution (1 µs), as the wheel keeps it.
        let now = Instant::now();
        assert!(
            first <= now + Duration::from_secs(5) + Duration::from_micros(1),
            "{first:?} {now:?}"
        );
    });
    Ok(())
}

/// Busy-waits `n` µs: a task poll that takes that long.
fn spin(n: u64) {
    let end = std::time::Instant::now() + us(n);
    while std::time::Instant::now() < end {
        std::hint::spin_loop();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Timers made at points spread over one long poll, each registered at once (polled) and
    /// given its deadline by the one reading at the turn's end: none completes before the
    /// instant read just after it was made plus its duration.
    #[test]
    fn no_timer_made_in_a_long_turn_completes_before_its_creation_plus_its_duration(
        timers in prop::collection::vec((0u64..300, 0u64..600, any::<bool>()), 1..10),
    ) {
        let rt = Builder::new().cores(1).build().unwrap();
        let late = rt.block_on(async {
            let mut made: Vec<(Pin<Box<Sleep>>, Instant, Duration)> = Vec::new();
            let mut timed: Vec<(Pin<Box<_>>, Instant, Duration)> = Vec::new();
            poll_fn(|cx| {
                for &(gap, span, is_timeout) in &timers {
                    spin(gap);
                    let span = us(span);
                    if is_timeout {
                        let mut t = Box::pin(timeout(span, pending::<()>()));
                        let at = Instant::now();
                        let _ = t.as_mut().poll(cx);
                        timed.push((t, at, span));
                    } else {
                        let mut s = Box::pin(sleep(span));
                        let at = Instant::now();
                        let _ = s.as_mut().poll(cx);
                        made.push((s, at, span));
                    }
                }
                Poll::Ready(())
            })
            .await;
            let mut early = Vec::new();
            for (s, at, span) in made {
                s.await;
                let now = Instant::now();
                if now < at + span {
                    early.push((at, span, now));
                }
            }
            for (t, at, span) in timed {
                assert!(t.await.is_err());
                let now = Instant::now();
                if now < at + span {
                    early.push((at, span, now));
                }
            }
            early
        });
        prop_assert!(late.is_empty(), "early: {late:?}");
    }
}
