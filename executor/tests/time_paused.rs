//! Paused time: timers fire in deadline order, `Instant::now` moves exactly as advanced, the
//! clock jumps to the next timer when every task waits, `timeout`, `interval` and its
//! missed-tick behaviours (against tokio's tick instants), `Sleep::reset`, and the timer
//! counters of `Runtime::stats` matching exactly what a test did.
//!
//! Every duration asserted here is one of the paused clock, which moves only when told to.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::future::{pending, poll_once};
use tickless::time::{
    advance, interval, interval_at, sleep, sleep_until, timeout, timeout_at, Elapsed, Instant,
    MissedTickBehavior,
};
use tickless::{spawn, spawn_local, yield_now, Builder, Runtime};

/// Paused, and exact: these tests assert the instants timers fire at, so they ask for no
/// default slack (the default's batching is `time_default_slack.rs`'s).
fn paused() -> io::Result<Runtime> {
    Builder::new()
        .start_paused(true)
        .default_slack(Duration::ZERO)
        .build()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Yields a few times: enough for tasks woken by timers that just fired to run.
async fn settle() {
    for _ in 0..4 {
        yield_now().await;
    }
}

#[test]
fn timers_fire_in_deadline_order_as_the_clock_jumps() -> io::Result<()> {
    let rt = paused()?;
    let fired = rt.block_on(async {
        let start = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let handles: Vec<_> = [50, 10, 30, 20, 40]
            .into_iter()
            .map(|id| {
                let log = log.clone();
                spawn_local(async move {
                    sleep(ms(id)).await;
                    log.borrow_mut().push((id, Instant::now() - start));
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
        log.take()
    });
    // Each woke exactly at its deadline: the clock jumped from one timer to the next.
    assert_eq!(
        fired,
        [10, 20, 30, 40, 50].map(|id| (id, ms(id))),
        "(id, woke at)"
    );
    let s = rt.stats().total;
    assert_eq!(
        (s.timer_inserts, s.timer_fires, s.parks),
        (5, 5, 0),
        "{s:?}"
    );
    Ok(())
}

#[test]
fn advance_fires_the_timers_it_passes_in_order() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let log = Rc::new(RefCell::new(Vec::new()));
        for id in [50u64, 10, 30, 20, 40] {
            let log = log.clone();
            drop(spawn_local(async move {
                sleep(ms(id)).await;
                log.borrow_mut().push(id);
            }));
        }
        settle().await; // every task registers its sleep
        advance(ms(15)).await;
        settle().await;
        assert_eq!(*log.borrow(), [10]);
        advance(ms(20)).await; // to 35
        settle().await;
        assert_eq!(*log.borrow(), [10, 20, 30]);
        advance(ms(15)).await; // to 50: a deadline reached exactly fires
        settle().await;
        assert_eq!(*log.borrow(), [10, 20, 30, 40, 50]);
    });
    Ok(())
}

#[test]
fn one_advance_past_many_timers_fires_them_in_deadline_order() -> io::Result<()> {
    // 200 distinct deadlines from 1 µs to an hour (every level of the wheel), in a scrambled
    // insertion order, all passed by a single advance.
    let mut x: u64 = 0x5eed;
    let mut deadlines: Vec<u64> = (0..200)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            1 + (x >> 33) % 3_600_000_000
        })
        .collect();
    let rt = paused()?;
    let fired = rt.block_on(async {
        let log = Rc::new(RefCell::new(Vec::new()));
        for &us in &deadlines {
            let log = log.clone();
            drop(spawn_local(async move {
                sleep(Duration::from_micros(us)).await;
                log.borrow_mut().push(us);
            }));
        }
        settle().await;
        advance(Duration::from_secs(7200)).await;
        settle().await;
        log.take()
    });
    deadlines.sort_unstable();
    deadlines.dedup();
    assert_eq!(fired.len(), 200);
    assert_eq!(fired, deadlines);
    Ok(())
}

#[test]
fn instant_now_moves_exactly_by_the_advanced_amount() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let start = Instant::now();
        advance(ms(7)).await;
        assert_eq!(Instant::now() - start, ms(7));
        advance(Duration::from_nanos(1)).await;
        assert_eq!(Instant::now() - start, ms(7) + Duration::from_nanos(1));
        advance(Duration::from_secs(86_400)).await;
        assert_eq!(
            Instant::now() - start,
            ms(7) + Duration::from_nanos(1) + Duration::from_secs(86_400)
        );
        advance(Duration::ZERO).await;
        assert_eq!(start.elapsed(), Instant::now() - start);
        // Real time passing does not move the paused clock.
        let before = Instant::now();
        std::thread::sleep(ms(2));
        yield_now().await;
        assert_eq!(Instant::now(), before);
    });
    Ok(())
}

#[test]
fn the_clock_jumps_to_the_next_timer_when_every_task_waits() -> io::Result<()> {
    let rt = paused()?;
    let slept = rt.block_on(async {
        let start = Instant::now();
        sleep(Duration::from_secs(3600)).await;
        Instant::now() - start
    });
    assert_eq!(slept, Duration::from_secs(3600));
    let s = rt.stats().total;
    // No real waiting: the core never blocked in epoll.
    assert_eq!((s.timer_fires, s.parks), (1, 0), "{s:?}");

    // Neither does it wait for a task that is sleeping while another one is runnable.
    let (order, slept) = rt.block_on(async {
        let start = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let l = log.clone();
        let sleeper = spawn_local(async move {
            sleep(ms(1)).await;
            l.borrow_mut().push("sleeper");
        });
        for _ in 0..100 {
            yield_now().await;
        }
        log.borrow_mut().push("yielder");
        sleeper.await.unwrap();
        let elapsed = Instant::now() - start;
        (log.take(), elapsed)
    });
    assert_eq!(
        order,
        ["yielder", "sleeper"],
        "time moved while a task was busy"
    );
    assert_eq!(slept, ms(1));
    Ok(())
}

#[test]
fn a_timeout_that_fires_gives_elapsed() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let start = Instant::now();
        let err: Elapsed = timeout(ms(10), pending::<()>()).await.unwrap_err();
        assert_eq!(err.to_string(), "deadline has elapsed");
        assert_eq!(io::Error::from(err).kind(), io::ErrorKind::TimedOut);
        let waited = Instant::now() - start;
        // Never early; late by at most a sixteenth (any slack a timeout takes is below that).
        assert!(
            waited >= ms(10) && waited <= ms(10) + ms(10) / 16,
            "{waited:?}"
        );

        let start = Instant::now();
        assert_eq!(timeout(ms(10), sleep(ms(20))).await, Err(err));
        assert!(Instant::now() - start >= ms(10));

        let start = Instant::now();
        assert_eq!(timeout_at(start + ms(5), pending::<()>()).await, Err(err));
        assert_eq!(Instant::now() - start, ms(5));
    });
    Ok(())
}

#[test]
fn a_timeout_that_does_not_fire_gives_the_output() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let start = Instant::now();
        assert_eq!(timeout(ms(20), async { 7 }).await, Ok(7));
        let out = timeout(ms(20), async {
            sleep(ms(10)).await;
            8
        })
        .await;
        assert_eq!(out, Ok(8));
        // It completed with its inner sleep, not with the deadline.
        assert_eq!(Instant::now() - start, ms(10));
        let task = spawn(async {
            sleep(ms(3)).await;
            9
        });
        assert_eq!(timeout(ms(5), task).await.unwrap().unwrap(), 9);
        assert_eq!(
            timeout_at(Instant::now() + ms(5), async { 10 }).await,
            Ok(10)
        );
    });
    Ok(())
}

/// Ticks of a 10 ms interval: three on time (0, 10, 20), then a 35 ms stall (the clock jumps
/// to 55), then `after` more. Each as (tick instant, clock when `tick` returned), since start.
fn ticks_after_a_stall(
    behavior: Option<MissedTickBehavior>,
    after: usize,
) -> io::Result<Vec<(u64, u64)>> {
    let rt = paused()?;
    Ok(rt.block_on(async {
        let start = Instant::now();
        let mut every = interval(ms(10));
        if let Some(b) = behavior {
            every.set_missed_tick_behavior(b);
        }
        let since = |i: Instant| (i - start).as_millis() as u64;
        let mut ticks = Vec::new();
        for _ in 0..3 {
            let tick = every.tick().await;
            ticks.push((since(tick), since(Instant::now())));
        }
        advance(ms(35)).await;
        for _ in 0..after {
            let tick = every.tick().await;
            ticks.push((since(tick), since(Instant::now())));
        }
        ticks
    }))
}

#[test]
fn interval_burst_fires_the_missed_ticks_at_once() -> io::Result<()> {
    // tokio: 30, 40 and 50 at once (at 55), then 60 and 70 on time.
    let expected = [
        (0, 0),
        (10, 10),
        (20, 20),
        (30, 55),
        (40, 55),
        (50, 55),
        (60, 60),
        (70, 70),
    ];
    assert_eq!(
        ticks_after_a_stall(Some(MissedTickBehavior::Burst), 5)?,
        expected
    );
    // Burst is the default.
    assert_eq!(ticks_after_a_stall(None, 5)?, expected);
    Ok(())
}

#[test]
fn interval_delay_restarts_the_period_from_the_late_tick() -> io::Result<()> {
    // tokio: 30 at once (at 55), then 65 and 75.
    assert_eq!(
        ticks_after_a_stall(Some(MissedTickBehavior::Delay), 3)?,
        [(0, 0), (10, 10), (20, 20), (30, 55), (65, 65), (75, 75)]
    );
    Ok(())
}

#[test]
fn interval_skip_goes_to_the_next_multiple_of_the_period() -> io::Result<()> {
    // tokio: 30 at once (at 55), then 60 and 70.
    assert_eq!(
        ticks_after_a_stall(Some(MissedTickBehavior::Skip), 3)?,
        [(0, 0), (10, 10), (20, 20), (30, 55), (60, 60), (70, 70)]
    );
    Ok(())
}

#[test]
fn interval_skip_after_over_2_pow_32_missed_periods_ticks_in_the_future() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let start = Instant::now();
        let period = Duration::from_micros(1);
        let mut every = interval(period);
        every.set_missed_tick_behavior(MissedTickBehavior::Skip);
        assert_eq!(every.tick().await, start);
        // A stall of 2^32 + 10.5 periods (about 72 minutes): more periods than a u32 counts.
        let periods: u64 = (1 << 32) + 10;
        let stall = Duration::from_micros(periods) + Duration::from_nanos(500);
        advance(stall).await;
        let stalled = Instant::now();
        assert_eq!(stalled - start, stall);
        // The late tick comes at once...
        assert_eq!(every.tick().await, start + period);
        assert_eq!(Instant::now(), stalled);
        // ...and the next is the first multiple of the period after the stall: in the future.
        let next = every.tick().await;
        assert!(
            next > stalled,
            "a tick before the stall ended: {:?}",
            next - start
        );
        assert_eq!(next - start, Duration::from_micros(periods + 1));
        assert_eq!(Instant::now(), next);
        // Then one period at a time again.
        assert_eq!(every.tick().await - next, period);
    });
    Ok(())
}

#[test]
fn interval_accessors_reset_and_a_later_start() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let start = Instant::now();
        let mut every = interval_at(start + ms(25), ms(10));
        assert_eq!(every.period(), ms(10));
        assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Burst);
        every.set_missed_tick_behavior(MissedTickBehavior::Skip);
        assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Skip);
        // The first tick is at `start`, not at once.
        assert_eq!(every.tick().await - start, ms(25));
        assert_eq!(every.tick().await - start, ms(35));
        advance(ms(3)).await; // to 38
        every.reset(); // the next tick is a period from now
        assert_eq!(every.tick().await - start, ms(48));
        assert_eq!(Instant::now() - start, ms(48));
    });
    Ok(())
}

#[test]
#[should_panic(expected = "`period` must be non-zero.")]
fn interval_of_zero_panics() {
    let _ = interval(Duration::ZERO);
}

#[test]
#[should_panic(expected = "`period` must be non-zero.")]
fn interval_at_of_zero_panics() {
    let _ = interval_at(Instant::now(), Duration::ZERO);
}

#[test]
fn sleep_reset_earlier_keeps_the_registration() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let start = Instant::now();
        let mut s = sleep(ms(100));
        assert!(poll_once(&mut s).await.is_none()); // registered
        s.reset(start + ms(30));
        assert_eq!(s.deadline(), start + ms(30));
        (&mut s).await;
        assert!(s.is_elapsed());
        assert_eq!(Instant::now() - start, ms(30));
    });
    let st = rt.stats().total;
    // One registration, moved: no second insert, no cancel.
    assert_eq!(
        (st.timer_inserts, st.timer_fires, st.timer_cancels),
        (1, 1, 0),
        "{st:?}"
    );
    Ok(())
}

#[test]
fn sleep_reset_later_and_after_completion() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let start = Instant::now();
        let mut s = sleep(ms(10));
        assert!(poll_once(&mut s).await.is_none());
        s.reset(start + ms(50));
        (&mut s).await;
        assert_eq!(Instant::now() - start, ms(50));

        // A completed sleep sleeps again once reset.
        s.reset(Instant::now() + ms(20));
        assert!(!s.is_elapsed());
        (&mut s).await;
        assert_eq!(Instant::now() - start, ms(70));

        // Reset to the past: completes without the clock moving.
        s.reset(start);
        (&mut s).await;
        assert_eq!(Instant::now() - start, ms(70));

        // Reset before the first poll: only the new deadline counts.
        let mut fresh = sleep(ms(1));
        fresh.reset(Instant::now() + ms(5));
        (&mut fresh).await;
        assert_eq!(Instant::now() - start, ms(75));
    });
    Ok(())
}

#[test]
fn timer_counters_match_what_the_test_did() -> io::Result<()> {
    let rt = paused()?;
    let counts = |rt: &Runtime| {
        let s = rt.stats().total;
        (s.timer_inserts, s.timer_fires, s.timer_cancels)
    };
    assert_eq!(counts(&rt), (0, 0, 0));

    // Five sleeps that fire.
    rt.block_on(async {
        let handles: Vec<_> = (1..=5).map(|i| spawn(sleep(ms(i)))).collect();
        for h in handles {
            h.await.unwrap();
        }
    });
    assert_eq!(counts(&rt), (5, 5, 0));

    // Three timeouts whose futures complete after their first poll: each timer is inserted,
    // then cancelled when the `Timeout` drops.
    rt.block_on(async {
        for _ in 0..3 {
            timeout(Duration::from_secs(1), yield_now()).await.unwrap();
        }
    });
    assert_eq!(counts(&rt), (8, 5, 3));

    // A timeout whose future is ready at once registers nothing.
    rt.block_on(async { timeout(Duration::from_secs(1), async {}).await.unwrap() });
    assert_eq!(counts(&rt), (8, 5, 3));

    // Two timeouts that fire: two inserts, two fires, nothing to cancel after.
    rt.block_on(async {
        for _ in 0..2 {
            timeout(ms(1), pending::<()>()).await.unwrap_err();
        }
    });
    assert_eq!(counts(&rt), (10, 7, 3));

    // A sleep dropped before it is polled costs nothing; one dropped pending is a cancel.
    rt.block_on(async {
        drop(sleep(ms(1)));
        let mut s = sleep(ms(1));
        assert!(poll_once(&mut s).await.is_none());
        drop(s);
    });
    assert_eq!(counts(&rt), (11, 7, 4));

    // An aborted sleeping task: its sleep is cancelled with its future.
    rt.block_on(async {
        let h = spawn(sleep(ms(1)));
        yield_now().await;
        h.abort();
        assert!(h.await.unwrap_err().is_cancelled());
    });
    assert_eq!(counts(&rt), (12, 7, 5));
    Ok(())
}

#[test]
fn sleep_until_follows_the_paused_clock() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let start = Instant::now();
        sleep_until(start + ms(12)).await;
        assert_eq!(Instant::now() - start, ms(12));
        // Deadlines at or before now are already due: the clock stays put.
        sleep_until(start + ms(12)).await;
        sleep_until(start).await;
        assert_eq!(Instant::now() - start, ms(12));
    });
    Ok(())
}

#[test]
fn pause_and_resume_on_a_running_clock() -> std::io::Result<()> {
    use std::time::Duration;
    use tickless::time::{pause, resume, sleep, Instant};
    let rt = tickless::Builder::new().cores(1).build()?;
    rt.block_on(async {
        pause();
        let start = Instant::now();
        // Paused: an hour's sleep jumps, and never arms the timerfd.
        sleep(Duration::from_secs(3600)).await;
        assert!(start.elapsed() >= Duration::from_secs(3600));
        resume();
        let resumed = Instant::now();
        assert!(
            resumed - start >= Duration::from_secs(3600),
            "runs on from where it stood"
        );
        // Real time again: a short sleep completes, which it would not if the timerfd were
        // not armed afresh (the queue's paused "arming" was never real).
        sleep(Duration::from_micros(50)).await;
        assert!(Instant::now() - resumed >= Duration::from_micros(50));
        let twice = tickless::spawn(async {
            pause();
            pause();
        });
        assert!(
            twice.await.unwrap_err().is_panic(),
            "pausing twice panics, as tokio's"
        );
        resume();
        let not_paused = tickless::spawn(async { resume() });
        assert!(not_paused.await.unwrap_err().is_panic());
    });
    Ok(())
}

#[test]
fn a_sleep_made_after_pause_fires_at_an_advance_of_its_length() -> std::io::Result<()> {
    use std::cell::Cell;
    use tickless::time::{pause, resume};
    // The default tick, and a millisecond one, which a raw clock reading is almost never on.
    for tick in [Duration::from_micros(1), ms(1)] {
        let rt = Builder::new()
            .cores(1)
            .timer_resolution(tick)
            .default_slack(Duration::ZERO)
            .build()?;
        let fired = rt.block_on(async {
            pause();
            let start = Instant::now();
            let fired = Rc::new(Cell::new(false));
            let flag = fired.clone();
            drop(spawn_local(async move {
                sleep(ms(1_000)).await;
                flag.set(true);
            }));
            settle().await; // the task registers its sleep
            advance(ms(1_000)).await;
            settle().await;
            assert_eq!(start.elapsed(), ms(1_000));
            resume();
            fired.get()
        });
        assert!(
            fired,
            "tick {tick:?}: advancing by the sleep's length left it pending"
        );
    }
    Ok(())
}

#[test]
fn paused_time_does_not_jump_while_io_has_woken_a_task() -> std::io::Result<()> {
    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    use std::time::Duration;
    use tickless::time::{sleep, Instant};
    // A reader waits on a pipe; a writer on the same core makes it readable and ends; a
    // sleeper waits an hour. When the core goes idle, the reader's readiness is there: the
    // reader runs before paused time may jump to the sleeper's hour.
    let rt = tickless::Builder::new()
        .cores(1)
        .start_paused(true)
        .build()?;
    rt.block_on(async {
        let start = Instant::now();
        let (mut w, mut r) = tickless::io::pipe()?;
        let sleeper = tickless::task::spawn_local(sleep(Duration::from_secs(3600)));
        let reader = tickless::task::spawn_local(async move {
            let mut b = [0u8; 1];
            r.read_exact(&mut b).await?;
            std::io::Result::Ok(Instant::now())
        });
        tickless::task::yield_now().await; // the reader waits
        w.write_all(b"x").await?;
        let read_at = reader.await.unwrap()?;
        assert_eq!(read_at, start, "time did not move while I/O was ready");
        sleeper.await.unwrap();
        // The jump lands where a real core would wake: the end of the sleep's window.
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(3600) + tickless::runtime::DEFAULT_SLACK_MAX
        );
        std::io::Result::Ok(())
    })
}

#[test]
fn timers_due_together_fire_in_batches_of_1024_with_tasks_run_between() -> std::io::Result<()> {
    use std::cell::Cell;
    use std::rc::Rc;
    use std::time::Duration;
    use tickless::time::{sleep_until, Instant};
    // 3,000 timers due at the same instant: the loop fires 1,024, runs the tasks they woke,
    // then fires the next batch. The first woken task to run sees exactly one batch fired.
    let rt = Rc::new(
        tickless::Builder::new()
            .cores(1)
            .start_paused(true)
            .build()?,
    );
    let first_seen = Rc::new(Cell::new(u64::MAX));
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(1);
        let tasks: Vec<_> = (0..3000)
            .map(|_| {
                let (rt, first_seen) = (rt.clone(), first_seen.clone());
                tickless::task::spawn_local(async move {
                    sleep_until(deadline).await;
                    let fired = rt.stats().cores[0].timer_fires;
                    first_seen.set(first_seen.get().min(fired));
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(first_seen.get(), 1024, "one batch, then the tasks it woke");
    Ok(())
}

#[test]
fn a_sleep_moved_to_another_task_wakes_that_task() -> std::io::Result<()> {
    use std::future::Future;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Wake, Waker};
    use std::time::Duration;

    /// Counts its wakes.
    struct Counting(AtomicUsize);
    impl Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let rt = tickless::Builder::new()
        .cores(1)
        .start_paused(true)
        .build()?;
    rt.block_on(async {
        let (first, second) = (
            Arc::new(Counting(AtomicUsize::new(0))),
            Arc::new(Counting(AtomicUsize::new(0))),
        );
        let mut nap = Box::pin(tickless::time::sleep(Duration::from_secs(1)));
        for w in [&first, &second] {
            let waker = Waker::from(w.clone());
            assert!(nap
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending());
        }
        // Let the second's deadline pass (paused time jumps past it).
        tickless::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(
            second.0.load(Ordering::SeqCst),
            1,
            "the last poller is woken"
        );
        assert_eq!(
            first.0.load(Ordering::SeqCst),
            0,
            "the replaced waker is not"
        );
    });
    Ok(())
}

/// I/O made ready at a paused instant reaches the `block_on` future before the clock jumps on:
/// a task writes at 200 ms, the main future reads under a 5 s timeout and gets the bytes at
/// 200 ms, not when the timeout's jump comes (the idle sequence once looked only at the task
/// queue after polling I/O, and missed a wake of the main future).
#[test]
fn io_ready_at_a_paused_instant_wakes_the_main_future_before_the_next_jump() -> io::Result<()> {
    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    let rt = paused()?;
    rt.block_on(async {
        let (mut server, mut client) = tickless::net::UnixStream::pair()?;
        let start = Instant::now();
        let writer = spawn_local(async move {
            sleep(ms(200)).await;
            server.write_all(b"ok").await
        });
        let mut buf = [0u8; 2];
        timeout(Duration::from_secs(5), client.read_exact(&mut buf))
            .await
            .expect("the read completes before its timeout")?;
        assert_eq!(&buf, b"ok");
        assert_eq!(start.elapsed(), ms(200), "read at the write's instant");
        writer.await.expect("writer")?;
        io::Result::Ok(())
    })
}

#[test]
fn a_cancelled_sleep_s_waker_is_never_the_one_another_task_s_sleep_wakes() -> io::Result<()> {
    // The core keeps the waker of the sleep cancelled last, for the next sleep that would
    // wake the same task: a sleep of another task must still wake its own.
    let rt = paused()?;
    let out = rt.block_on(async {
        let a = spawn_local(async {
            let mut nap = sleep(Duration::from_secs(10));
            assert!(poll_once(&mut nap).await.is_none());
            drop(nap);
            pending::<()>().await;
        });
        yield_now().await;
        let b = spawn_local(async {
            sleep(Duration::from_secs(1)).await;
            7
        });
        // b's sleep registers first, while a's waker is the one kept.
        yield_now().await;
        let out = timeout(Duration::from_secs(100), b).await;
        a.abort();
        out.map(|joined| joined.expect("task b"))
    });
    assert_eq!(out, Ok(7), "b's sleep woke b");
    Ok(())
}

#[test]
fn a_sleep_dropped_on_its_own_core_is_cancelled_at_once_not_through_the_inbox() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let mut nap = sleep(Duration::from_secs(10));
        assert!(poll_once(&mut nap).await.is_none());
        let before = rt.stats().total;
        drop(nap);
        let after = rt.stats().total;
        assert_eq!(after.timer_cancels, before.timer_cancels + 1, "{after:?}");
    });
    Ok(())
}
