//! Time with awkward input: zero and `Duration::MAX` sleeps and timeouts, deadlines in the past,
//! advancing paused time by `Duration::MAX`, sleeps that must never end early (measured
//! against the real clock, under every re-arm policy), and time APIs used outside a runtime.

use std::io;
use std::time::Duration;

use futures_lite::future::{pending, poll_once};
use tickless::time::{
    advance, interval, sleep, sleep_until, timeout, timeout_at, Instant, MissedTickBehavior,
};
use tickless::{spawn, spawn_local, yield_now, Builder, RearmPolicy, Runtime};

/// The message every API that needs a runtime panics with outside one.
const NO_RUNTIME: &str = "must be called from a task or `block_on` of a tickless runtime";

fn paused() -> io::Result<Runtime> {
    Builder::new().start_paused(true).build()
}

/// The requested sleeps of the never-early tests: 100 µs to 2 ms.
fn requests() -> impl DoubleEndedIterator<Item = Duration> {
    (1..=20).map(|i| Duration::from_micros(100 * i))
}

#[test]
fn sleep_zero_completes_without_a_timer() -> io::Result<()> {
    let rt = Runtime::new()?;
    rt.block_on(async {
        let s = sleep(Duration::ZERO);
        assert!(s.is_elapsed());
        s.await;
        for _ in 0..10 {
            sleep(Duration::ZERO).await;
        }
    });
    let s = rt.stats().total;
    assert_eq!((s.timer_inserts, s.timer_fires), (0, 0), "{s:?}");
    Ok(())
}

#[test]
fn deadlines_read_back_as_given_and_instants_past_292_years_are_the_range_s_end() -> io::Result<()>
{
    let rt = Runtime::new()?;
    rt.block_on(async {
        let t = Instant::now() + Duration::from_millis(1_234);
        assert_eq!(sleep_until(t).deadline(), t, "kept in nanoseconds, exactly");
        let mut moved = sleep_until(t);
        moved.reset(t + Duration::from_nanos(1));
        assert_eq!(moved.deadline(), t + Duration::from_nanos(1));
        let millennium = Duration::from_secs(1_000 * 365 * 86_400);
        assert_eq!(Instant::now().checked_add(millennium), None);
        // A std instant that far converts as the end of the range, and sleeps there.
        let far = Instant::from_std(std::time::Instant::now() + millennium);
        assert!(far > Instant::now() + Duration::from_secs(290 * 365 * 86_400));
        assert_eq!(far.checked_add(Duration::from_nanos(1)), None);
        let mut s = sleep_until(far);
        assert_eq!(s.deadline(), far);
        assert!(poll_once(&mut s).await.is_none());
        // An instant a second ago (before the epoch, most likely) comes back as it went in.
        let past = std::time::Instant::now()
            .checked_sub(Duration::from_secs(1))
            .unwrap();
        assert_eq!(Instant::from_std(past).into_std(), past);
    });
    Ok(())
}

#[test]
fn sleep_max_registers_without_panicking_and_loses_a_race() -> io::Result<()> {
    for rt in [Runtime::new()?, paused()?] {
        rt.block_on(async {
            let mut s = sleep(Duration::MAX);
            assert!(poll_once(&mut s).await.is_none());
            // Clamped decades out rather than overflowing.
            assert!(s.deadline() > Instant::now() + Duration::from_secs(10 * 365 * 86_400));
            assert!(!s.is_elapsed());
            drop(s);
            let raced = timeout(Duration::from_millis(2), sleep(Duration::MAX)).await;
            assert!(raced.is_err());
            // A task sleeping for ever can still be aborted.
            let forever = spawn(sleep(Duration::MAX));
            let mut short = sleep(Duration::from_millis(1));
            (&mut short).await;
            assert!(!forever.is_finished());
            forever.abort();
            assert!(forever.await.unwrap_err().is_cancelled());
        });
        let s = rt.stats().total;
        assert_eq!(
            (s.timer_inserts, s.timer_fires, s.timer_cancels),
            (5, 2, 3),
            "{s:?}"
        );
    }
    Ok(())
}

#[test]
fn timeout_max_does_not_panic() -> io::Result<()> {
    let rt = Runtime::new()?;
    rt.block_on(async {
        assert_eq!(timeout(Duration::MAX, async { 1 }).await, Ok(1));
        let out = timeout(Duration::MAX, async {
            sleep(Duration::from_micros(200)).await;
            2
        })
        .await;
        assert_eq!(out, Ok(2));
        let far = Instant::now() + Duration::from_secs(100 * 365 * 86_400);
        assert_eq!(timeout_at(far, async { 3 }).await, Ok(3));
    });
    Ok(())
}

#[test]
fn timeout_zero_lets_a_ready_future_win_and_fails_a_pending_one() -> io::Result<()> {
    for rt in [Runtime::new()?, paused()?] {
        rt.block_on(async {
            assert_eq!(timeout(Duration::ZERO, async { 5 }).await, Ok(5));
            assert!(timeout(Duration::ZERO, pending::<()>()).await.is_err());
            assert!(timeout(Duration::ZERO, sleep(Duration::from_secs(1)))
                .await
                .is_err());
        });
    }
    Ok(())
}

#[test]
fn deadlines_in_the_past_complete() -> io::Result<()> {
    let rt = Runtime::new()?;
    rt.block_on(async {
        sleep_until(Instant::now() - Duration::from_secs(1)).await;
        sleep_until(Instant::now()).await;
        // Before the runtime even started.
        sleep_until(Instant::from_std(std::time::Instant::now()) - Duration::from_secs(10)).await;
        let past = Instant::now() - Duration::from_millis(1);
        assert!(timeout_at(past, pending::<()>()).await.is_err());
        assert_eq!(timeout_at(past, async { 1 }).await, Ok(1));
    });
    // On paused time, without the clock moving.
    let rt = paused()?;
    rt.block_on(async {
        let start = Instant::now();
        sleep_until(start - Duration::from_secs(1)).await;
        assert!(timeout_at(start - Duration::from_secs(1), pending::<()>())
            .await
            .is_err());
        let mut s = sleep(Duration::from_secs(1));
        assert!(poll_once(&mut s).await.is_none());
        s.reset(start - Duration::from_secs(5));
        s.await;
        assert_eq!(Instant::now(), start);
    });
    Ok(())
}

/// Sleeps until `deadline()` `n` times, each polled once, then (if it was registered) polled
/// again after one yield, which must complete it; then `n` more awaited. Returns how many were
/// registered at their first poll, and the counters' change (checked: one fire per insert).
async fn past_deadlines(
    rt: &Runtime,
    n: u64,
    deadline: impl Fn() -> Instant,
) -> (u64, tickless::CoreStats) {
    let before = rt.stats().total;
    let mut registered = 0;
    for _ in 0..n {
        let mut s = sleep_until(deadline());
        if poll_once(&mut s).await.is_none() {
            registered += 1;
            yield_now().await;
            assert_eq!(
                poll_once(&mut s).await,
                Some(()),
                "not done after one yield"
            );
        }
    }
    for _ in 0..n {
        sleep_until(deadline()).await;
    }
    let d = rt.stats().total - before;
    assert_eq!(d.timer_fires, d.timer_inserts, "{d:?}");
    (registered, d)
}

#[test]
fn a_past_deadline_completes_at_once_or_at_the_next_turn_without_arming_the_timerfd(
) -> io::Result<()> {
    // Real time: paused time never arms the timerfd, so it could not tell.
    let before_the_runtime = Instant::from_std(std::time::Instant::now()) - Duration::from_secs(1);
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        // Passed at the core's last clock reading (before the runtime even started): complete
        // at the first poll, registering nothing.
        let (registered, d) = past_deadlines(&rt, 10, || before_the_runtime).await;
        assert_eq!((registered, d.timer_inserts), (0, 0), "{d:?}");

        // Passed only since the core's last reading: blocking the core's thread makes that
        // reading older than a deadline 1 ms ago (a setup, not a measurement). Registered, and
        // done at the loop's next turn.
        std::thread::sleep(Duration::from_millis(2));
        let (registered, d) =
            past_deadlines(&rt, 10, || Instant::now() - Duration::from_millis(1)).await;
        assert!(registered >= 1, "{d:?}");
        // Neither armed the timerfd nor slept.
        assert_eq!((d.timerfd_rearms, d.parks), (0, 0), "{d:?}");
    });
    // With a 1 ns resolution, even a deadline passed by nanoseconds (the clock read just
    // before the sleep is made) behaves so.
    let rt = Builder::new()
        .cores(1)
        .timer_resolution(Duration::from_nanos(1))
        .build()?;
    rt.block_on(async {
        let (registered, d) = past_deadlines(&rt, 100, Instant::now).await;
        assert!(registered >= 1, "{d:?}");
        assert_eq!((d.timerfd_rearms, d.parks), (0, 0), "{d:?}");
    });
    Ok(())
}

#[test]
fn shutdown_with_an_unbounded_timeout_waits_and_returns_ok() -> io::Result<()> {
    for cores in [1, 2] {
        let rt = Builder::new().cores(cores).build()?;
        let waiting: Vec<_> = (0..cores)
            .map(|i| rt.handle(i).spawn(sleep(Duration::from_secs(3600))))
            .collect();
        // Let them all start.
        rt.block_on(async {
            for _ in 0..3 {
                yield_now().await;
            }
        });
        assert_eq!(rt.shutdown(Duration::MAX), Ok(()));
        for h in waiting {
            assert!(h.join().unwrap_err().is_cancelled());
        }
    }
    Ok(())
}

#[test]
fn advancing_paused_time_far_keeps_never_early_and_past_its_range_panics() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let start = Instant::now();
        let twenty_years = Duration::from_secs(86_400 * 365 * 20);
        let handles: Vec<_> = [1, 3600, 86_400 * 365 * 20]
            .map(|secs| spawn(sleep(Duration::from_secs(secs))))
            .into_iter()
            .collect();
        let forever = spawn(sleep(Duration::MAX));
        for _ in 0..4 {
            tickless::yield_now().await;
        }
        advance(twenty_years).await;
        for h in handles {
            h.await.unwrap();
        }
        assert_eq!(Instant::now() - start, twenty_years);
        assert!(
            !forever.is_finished(),
            "Duration::MAX is about 30 years out"
        );
        // A move past the paused clock's range is refused, loudly, and moves nothing.
        let before = Instant::now();
        let refused = spawn(advance(Duration::MAX)).await.unwrap_err();
        assert!(refused.is_panic());
        assert!(refused.to_string().contains("past its range"), "{refused}");
        assert_eq!(Instant::now(), before);
        // Time keeps working, never early.
        let t = Instant::now();
        sleep(Duration::from_secs(1)).await;
        // Never early; at most the default slack late (the paused clock jumps to the grid).
        let took = t.elapsed();
        assert!(took >= Duration::from_secs(1), "{took:?}");
        assert!(
            took <= Duration::from_secs(1) + tickless::runtime::DEFAULT_SLACK_MAX,
            "{took:?}"
        );
        let mut every = interval(Duration::from_millis(1));
        every.tick().await;
        assert!(timeout(Duration::from_millis(1), pending::<()>())
            .await
            .is_err());
    });
    Ok(())
}

#[test]
fn paused_time_stops_short_of_a_timer_beyond_its_range() -> io::Result<()> {
    // About 146 years is the range; a timer past it never fires, and the core waits for
    // other work instead of spinning: here the main future's own timer.
    let rt = paused()?;
    rt.block_on(async {
        let century = Duration::from_secs(86_400 * 365 * 100);
        advance(century).await;
        let beyond = spawn(sleep(century));
        sleep(Duration::from_secs(5)).await;
        assert!(!beyond.is_finished());
        beyond.abort();
        assert!(beyond.await.unwrap_err().is_cancelled());
    });
    Ok(())
}

/// Sleeps each request in turn and checks it against the real clock.
async fn never_early_in_turn() {
    for d in requests() {
        let before = std::time::Instant::now();
        sleep(d).await;
        let slept = before.elapsed();
        assert!(slept >= d, "asked {d:?}, woke after {slept:?}");
    }
}

#[test]
fn sleeps_never_end_early() -> io::Result<()> {
    let rt = Runtime::new()?;
    rt.block_on(never_early_in_turn());
    Ok(())
}

#[test]
fn sleeps_never_end_early_under_any_policy_or_resolution() -> io::Result<()> {
    let configs = [
        Builder::new().timer_policy(RearmPolicy::Eager).build()?,
        Builder::new().timer_policy(RearmPolicy::OnIdle).build()?,
        Builder::new().timer_policy(RearmPolicy::Lazy).build()?,
        Builder::new()
            .timer_resolution(Duration::from_micros(250))
            .build()?,
        Builder::new()
            .default_slack(Duration::from_micros(300))
            .build()?,
    ];
    for rt in configs {
        rt.block_on(never_early_in_turn());
    }
    Ok(())
}

#[test]
fn concurrent_sleeps_never_end_early() -> io::Result<()> {
    let rt = Runtime::new()?;
    rt.block_on(async {
        // Interleaved deadlines, inserted in reverse, some of them shared.
        let handles: Vec<_> = requests()
            .chain(requests())
            .rev()
            .map(|d| {
                spawn_local(async move {
                    let before = std::time::Instant::now();
                    let deadline = Instant::now() + d;
                    sleep_until(deadline).await;
                    let now = std::time::Instant::now();
                    assert!(
                        now - before >= d,
                        "asked {d:?}, woke after {:?}",
                        now - before
                    );
                    assert!(now >= deadline.into_std());
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
    });
    assert_eq!(rt.stats().total.timer_fires, 40);
    Ok(())
}

#[test]
fn timeouts_and_interval_ticks_never_come_early() -> io::Result<()> {
    let rt = Runtime::new()?;
    rt.block_on(async {
        for d in requests().step_by(4) {
            let before = std::time::Instant::now();
            assert!(timeout(d, pending::<()>()).await.is_err());
            assert!(before.elapsed() >= d);
        }
        let period = Duration::from_micros(300);
        let mut every = interval(period);
        every.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let first = every.tick().await;
        for _ in 0..10 {
            let tick = every.tick().await;
            assert!(std::time::Instant::now() >= tick.into_std());
            assert!(tick - first >= period);
        }
    });
    Ok(())
}

#[test]
fn time_values_can_be_made_outside_a_runtime() {
    // Only polling needs a runtime; `Instant::now` reads the system clock outside one.
    let before = Instant::from_std(std::time::Instant::now());
    let s = sleep(Duration::from_millis(1));
    assert!(!s.is_elapsed());
    drop(timeout(Duration::from_millis(1), pending::<()>()));
    let every = interval(Duration::from_millis(1));
    assert_eq!(every.period(), Duration::from_millis(1));
    assert!(Instant::now() >= before);
}

#[test]
#[should_panic(expected = "must be called from a task or `block_on` of a tickless runtime")]
fn polling_a_sleep_outside_a_runtime_panics() {
    futures_lite::future::block_on(sleep(Duration::from_millis(1)));
}

#[test]
fn the_runtime_missing_panics_say_so() {
    let message = |f: Box<dyn FnOnce()>| {
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_err();
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    };
    type Case = (&'static str, Box<dyn FnOnce()>);
    let cases: Vec<Case> = vec![
        (
            "polling a sleep",
            Box::new(|| futures_lite::future::block_on(sleep(Duration::from_millis(1)))),
        ),
        (
            "polling a timeout",
            Box::new(|| {
                let _ = futures_lite::future::block_on(timeout(
                    Duration::from_millis(1),
                    pending::<()>(),
                ));
            }),
        ),
        (
            "polling an interval",
            Box::new(|| {
                let mut every = interval(Duration::from_millis(1));
                futures_lite::future::block_on(every.tick());
            }),
        ),
        ("spawn", Box::new(|| drop(spawn(async {})))),
        ("spawn_local", Box::new(|| drop(spawn_local(async {})))),
        (
            "advance",
            Box::new(|| futures_lite::future::block_on(advance(Duration::from_millis(1)))),
        ),
    ];
    for (what, f) in cases {
        let m = message(f);
        assert!(m.contains(NO_RUNTIME), "{what}: {m:?}");
    }
}

#[test]
#[should_panic(expected = "must be called from a task or `block_on` of a tickless runtime")]
fn spawn_outside_a_runtime_panics() {
    drop(spawn(async {}));
}

#[test]
#[should_panic(expected = "`time::advance` needs paused time")]
fn advance_on_real_time_panics() {
    let rt = Runtime::new().unwrap();
    rt.block_on(advance(Duration::from_millis(1)));
}

#[test]
fn out_of_range_timer_settings_are_build_errors() {
    for (what, mut b) in [
        ("zero resolution", {
            let mut b = Builder::new();
            b.timer_resolution(Duration::ZERO);
            b
        }),
        ("huge resolution", {
            let mut b = Builder::new();
            b.timer_resolution(Duration::MAX);
            b
        }),
        ("huge default slack", {
            let mut b = Builder::new();
            b.default_slack(Duration::MAX);
            b
        }),
    ] {
        let err = b.cores(1).build().expect_err(what);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{what}");
        assert!(
            err.to_string().contains("out of range") || err.to_string().contains("largest"),
            "{what}: {err}"
        );
    }
    // The limits themselves are accepted.
    Builder::new()
        .cores(1)
        .timer_resolution(tickless::runtime::MAX_TIMER_RESOLUTION)
        .default_slack(tickless::runtime::MAX_SLACK)
        .build()
        .unwrap();
}

#[test]
fn a_huge_slack_is_capped_and_the_sleep_still_completes() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let start = Instant::now();
        sleep(Duration::from_millis(1)).slack(Duration::MAX).await;
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(1), "never early: {took:?}");
        assert!(
            took <= tickless::runtime::MAX_SLACK + Duration::from_millis(1),
            "{took:?}"
        );
    });
    Ok(())
}
