//! Tasks and their join handles: output, abort, `is_finished`, panics, detaching, `!Send`
//! tasks, `yield_now` fairness, a spinning task that must not starve timers or I/O, and
//! `block_on` refusing to nest.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::time::{sleep, Instant};
use tickless::{spawn, spawn_local, yield_now, Builder, JoinHandle, Runtime};

/// Hang guard for the spinning tests: a spinner that has yielded this many times without the
/// timer or I/O it waits for getting through is declared starved. A count, not a duration:
/// a loaded machine slows the spinner and the clock it waits for alike.
const MAX_SPINS: u64 = 5_000_000;

/// Counts its drops.
struct DropGuard(Arc<AtomicUsize>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn paused() -> io::Result<Runtime> {
    Builder::new().start_paused(true).build()
}

/// Yields until `cond` holds.
async fn until(cond: impl Fn() -> bool) {
    while !cond() {
        yield_now().await;
    }
}

/// The message of a panic payload (`&str` or `String`).
fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string payload>".to_string())
}

fn _assert_send<T: Send>() {}

#[test]
fn join_handle_is_send_when_the_output_is() {
    _assert_send::<JoinHandle<u32>>();
    _assert_send::<tickless::JoinError>();
}

#[test]
fn join_handle_gives_the_output() -> io::Result<()> {
    let rt = Runtime::new()?;
    let out = rt.block_on(async {
        let a = spawn(async { 6 * 7 });
        let b = spawn(async {
            yield_now().await;
            String::from("after a yield")
        });
        (a.await, b.await)
    });
    assert_eq!(out.0.unwrap(), 42);
    assert_eq!(out.1.unwrap(), "after a yield");
    Ok(())
}

#[test]
fn abort_of_a_pending_task_cancels_it_and_drops_its_future() -> io::Result<()> {
    let rt = paused()?;
    let drops = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicBool::new(false));
    let guard = DropGuard(drops.clone());
    let s = started.clone();
    rt.block_on(async {
        let start = Instant::now();
        let handle = spawn(async move {
            let _guard = guard;
            s.store(true, Ordering::SeqCst);
            sleep(Duration::from_secs(3600)).await;
            "slept an hour"
        });
        until(|| started.load(Ordering::SeqCst)).await;
        assert!(!handle.is_finished());
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        handle.abort();
        let err = handle.await.unwrap_err();
        assert!(err.is_cancelled(), "{err:?}");
        assert!(!err.is_panic());
        assert!(err.to_string().contains("cancelled"), "{err}");
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "the aborted future was not dropped"
        );
        // Paused time did not jump to the hour: the abort won.
        assert_eq!(Instant::now() - start, Duration::ZERO);
    });
    let s = rt.stats().total;
    assert_eq!(
        (s.timer_inserts, s.timer_fires, s.timer_cancels),
        (1, 0, 1),
        "{s:?}"
    );
    Ok(())
}

/// Hang guard for a thread outside the runtime: waits (really) until `cond` holds. A count of
/// short sleeps, not a deadline asserted on.
fn wait_for(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..200_000 {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    panic!("never happened: {what}");
}

#[test]
fn abort_of_a_spawn_at_task_waiting_for_its_deadline_drops_it_at_once() -> io::Result<()> {
    // Core 0 on paused time: the clock moves only if the core idles, and a main future that
    // keeps yielding never does, so the deadline 20 s out can only be reached by the abort.
    let rt = paused()?;
    let core0 = rt.handle(0);
    let drops = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let start = Instant::now();
        let deadline = start + Duration::from_secs(20);
        let task = |drops: &Arc<AtomicUsize>| {
            let (guard, ran) = (DropGuard(drops.clone()), ran.clone());
            async move {
                let _guard = guard;
                ran.fetch_add(1, Ordering::SeqCst);
            }
        };
        // Aborted once the core has put it in its wheel.
        let waiting = core0.spawn_at(deadline, task(&drops));
        for _ in 0..3 {
            yield_now().await;
        }
        let before = rt.stats().total;
        assert_eq!(before.timer_inserts, 1, "{before:?}");
        assert!(!waiting.is_finished());
        waiting.abort();
        let mut turns = 0;
        while !waiting.is_finished() {
            assert!(turns < 3, "the abort waits for the deadline");
            yield_now().await;
            turns += 1;
        }
        assert_eq!(drops.load(Ordering::SeqCst), 1, "the future was dropped");
        assert!(waiting.await.unwrap_err().is_cancelled());
        let after = rt.stats().total;
        assert_eq!(after.timer_cancels - before.timer_cancels, 1, "{after:?}");
        // Aborted before the core has even taken its insert from the inbox.
        let handed = core0.spawn_at(deadline, task(&drops));
        handed.abort();
        until(|| handed.is_finished()).await;
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        assert!(handed.await.unwrap_err().is_cancelled());
        assert_eq!(rt.stats().total.timer_cancels - before.timer_cancels, 2);
        // Neither ran, no timer fired, and paused time never moved.
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(rt.stats().total.timer_fires, 0);
        assert_eq!(Instant::now(), start);
    });

    // Core 1, on real time and asleep: the abort wakes it to cancel the timer.
    let rt = Builder::new().cores(2).build()?;
    let h1 = rt.handle(1);
    let drops = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicBool::new(false));
    let (guard, r) = (DropGuard(drops.clone()), ran.clone());
    let waiting = h1.spawn_at(Instant::now() + Duration::from_secs(20), async move {
        let _guard = guard;
        r.store(true, Ordering::SeqCst);
    });
    // Core 1 publishes its counters before it sleeps: once they show the insert and it
    // sleeps, the task waits in its wheel; or, handed over while core 1 slept, in its inbox,
    // with its timerfd programmed for it by this thread (a remote arm).
    wait_for("core 1 sleeps with the timer", || {
        let c = rt.stats().cores[1];
        (c.timer_inserts == 1 || c.remote_arms == 1) && h1.is_parked()
    });
    let before = rt.stats().cores[1];
    waiting.abort();
    wait_for("the aborted task's handle resolves", || {
        waiting.is_finished()
    });
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(waiting.join().unwrap_err().is_cancelled());
    wait_for("core 1 sleeps again", || h1.is_parked());
    let after = rt.stats().cores[1];
    assert_eq!(after.timer_cancels - before.timer_cancels, 1, "{after:?}");
    assert_eq!(
        after.timer_fires, before.timer_fires,
        "the timer never fired"
    );
    assert!(!ran.load(Ordering::SeqCst));
    Ok(())
}

#[test]
fn abort_before_the_first_poll_never_runs_the_future() -> io::Result<()> {
    let rt = Runtime::new()?;
    let drops = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicBool::new(false));
    let guard = DropGuard(drops.clone());
    let r = ran.clone();
    rt.block_on(async {
        let handle = spawn(async move {
            let _guard = guard;
            r.store(true, Ordering::SeqCst);
        });
        handle.abort();
        assert!(handle.await.unwrap_err().is_cancelled());
    });
    assert!(!ran.load(Ordering::SeqCst), "an aborted task was polled");
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    Ok(())
}

#[test]
fn abort_of_a_finished_task_keeps_its_output() -> io::Result<()> {
    let rt = Runtime::new()?;
    rt.block_on(async {
        let handle = spawn(async { 7 });
        until(|| handle.is_finished()).await;
        handle.abort();
        handle.abort();
        assert!(handle.is_finished());
        assert_eq!(handle.await.unwrap(), 7);
    });
    Ok(())
}

#[test]
fn abort_from_another_thread_cancels_the_task() -> io::Result<()> {
    let rt = Runtime::new()?;
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = DropGuard(drops.clone());
    rt.block_on(async {
        let handle = spawn(async move {
            let _guard = guard;
            futures_lite::future::pending::<()>().await;
        });
        yield_now().await;
        std::thread::scope(|s| {
            s.spawn(|| handle.abort());
        });
        assert!(handle.await.unwrap_err().is_cancelled());
    });
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    Ok(())
}

#[test]
fn is_finished_follows_the_task() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let handle = spawn(async {
            sleep(Duration::from_millis(10)).await;
            1
        });
        yield_now().await;
        assert!(!handle.is_finished());
        sleep(Duration::from_millis(5)).await;
        assert!(!handle.is_finished());
        sleep(Duration::from_millis(10)).await;
        until(|| handle.is_finished()).await;
        assert_eq!(handle.await.unwrap(), 1);
    });
    Ok(())
}

#[test]
fn join_from_another_thread_blocks_until_the_task_finishes() -> io::Result<()> {
    let rt = Runtime::new()?;
    let out = rt.block_on(async {
        let handle = spawn(async {
            sleep(Duration::from_millis(2)).await;
            "joined"
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let joiner = std::thread::spawn(move || tx.send(handle.join()).unwrap());
        // Keep the core running (and sleeping in epoll) until the joiner has the output.
        let out = loop {
            if let Ok(out) = rx.try_recv() {
                break out;
            }
            sleep(Duration::from_millis(1)).await;
        };
        joiner.join().unwrap();
        out
    });
    assert_eq!(out.unwrap(), "joined");
    Ok(())
}

#[test]
fn a_panicking_task_gives_is_panic_and_the_others_run_on() -> io::Result<()> {
    let rt = Runtime::new()?;
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let late = rt.block_on(async move {
        let handles: Vec<_> = (0..5usize)
            .map(|i| {
                let guard = DropGuard(d.clone());
                spawn(async move {
                    let _guard = guard;
                    for _ in 0..i {
                        yield_now().await;
                    }
                    if i == 2 {
                        panic!("task {i} fails on purpose");
                    }
                    i * 10
                })
            })
            .collect();
        for (i, handle) in handles.into_iter().enumerate() {
            match handle.await {
                Ok(v) => assert_eq!(v, i * 10),
                Err(e) => {
                    assert_eq!(i, 2, "task {i} failed: {e:?}");
                    assert!(e.is_panic());
                    assert!(!e.is_cancelled());
                    assert!(
                        format!("{e:?}").contains("task 2 fails on purpose"),
                        "{e:?}"
                    );
                    assert!(e.to_string().contains("task 2 fails on purpose"), "{e}");
                    let payload = e.into_panic();
                    assert_eq!(panic_message(&*payload), "task 2 fails on purpose");
                }
            }
        }
        // The core keeps serving tasks spawned after the panic.
        spawn(async { "after the panic" }).await.unwrap()
    });
    assert_eq!(late, "after the panic");
    assert_eq!(
        drops.load(Ordering::SeqCst),
        5,
        "the panicking task's guard leaked"
    );
    Ok(())
}

#[test]
fn a_static_str_panic_payload_is_retrievable() -> io::Result<()> {
    let rt = Runtime::new()?;
    let err = rt.block_on(async {
        spawn(async {
            panic!("a static message");
        })
        .await
        .unwrap_err()
    });
    let payload = err.into_panic();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"a static message"));
    Ok(())
}

#[test]
fn a_panic_in_the_block_on_future_leaves_the_runtime_usable() -> io::Result<()> {
    let rt = Runtime::new()?;
    let caught = catch_unwind(AssertUnwindSafe(|| {
        rt.block_on(async {
            yield_now().await;
            panic!("main future fails on purpose");
        })
    }));
    assert_eq!(
        panic_message(&*caught.unwrap_err()),
        "main future fails on purpose"
    );
    let out = rt.block_on(async { spawn(async { 5 }).await });
    assert_eq!(out.unwrap(), 5);
    Ok(())
}

#[test]
fn dropping_a_join_handle_detaches_the_task() -> io::Result<()> {
    let rt = paused()?;
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    rt.block_on(async move {
        drop(spawn(async move {
            sleep(Duration::from_millis(10)).await;
            d.store(true, Ordering::SeqCst);
        }));
        sleep(Duration::from_millis(20)).await;
    });
    assert!(
        done.load(Ordering::SeqCst),
        "a detached task did not finish"
    );
    Ok(())
}

#[test]
fn a_detached_task_left_pending_runs_on_at_the_next_block_on() -> io::Result<()> {
    let rt = paused()?;
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    rt.block_on(async move {
        drop(spawn(async move {
            sleep(Duration::from_millis(10)).await;
            d.store(true, Ordering::SeqCst);
        }));
    });
    assert!(!done.load(Ordering::SeqCst));
    rt.block_on(sleep(Duration::from_millis(20)));
    assert!(done.load(Ordering::SeqCst));
    Ok(())
}

#[test]
fn spawn_local_runs_non_send_futures() -> io::Result<()> {
    let rt = Runtime::new()?;
    let shared = Rc::new(RefCell::new(Vec::new()));
    let sh = shared.clone();
    let out = rt.block_on(async move {
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let sh = sh.clone();
                spawn_local(async move {
                    yield_now().await;
                    sh.borrow_mut().push(i);
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
        // A `!Send` output comes back through the handle too.
        spawn_local(async { Rc::new(String::from("local")) })
            .await
            .unwrap()
    });
    assert_eq!(*out, "local");
    assert_eq!(*shared.borrow(), [0, 1, 2]);
    // Every task's future is gone, with its clone of the `Rc`.
    assert_eq!(Rc::strong_count(&shared), 1);
    Ok(())
}

#[test]
fn yield_now_interleaves_two_tasks() -> io::Result<()> {
    let rt = Runtime::new()?;
    let log = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    rt.block_on(async move {
        let task = |name: &'static str| {
            let l = l.clone();
            spawn_local(async move {
                for i in 0..3 {
                    l.borrow_mut().push((name, i));
                    yield_now().await;
                }
            })
        };
        let a = task("a");
        let b = task("b");
        a.await.unwrap();
        b.await.unwrap();
    });
    assert_eq!(
        *log.borrow(),
        [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    );
    Ok(())
}

/// Spawns a task that yields until `done`, counting its spins into the returned cell.
fn spinner(done: Rc<Cell<bool>>) -> (JoinHandle<()>, Rc<Cell<u64>>) {
    let spins = Rc::new(Cell::new(0u64));
    let s = spins.clone();
    let handle = spawn_local(async move {
        while !done.get() {
            s.set(s.get() + 1);
            assert!(
                s.get() < MAX_SPINS,
                "starved: {MAX_SPINS} spins and no wakeup"
            );
            yield_now().await;
        }
    });
    (handle, spins)
}

#[test]
fn a_spinning_task_does_not_starve_a_timer() -> io::Result<()> {
    let rt = Runtime::new()?;
    let spins = rt.block_on(async {
        let done = Rc::new(Cell::new(false));
        let d = done.clone();
        let (spin, spins) = spinner(done);
        let timer = spawn_local(async move {
            sleep(Duration::from_millis(1)).await;
            d.set(true);
        });
        timer.await.unwrap();
        spin.await.unwrap();
        spins.get()
    });
    assert!(spins > 0, "the spinner never ran");
    let s = rt.stats().total;
    assert_eq!((s.timer_inserts, s.timer_fires), (1, 1), "{s:?}");
    Ok(())
}

#[test]
fn a_spinning_task_does_not_starve_io() -> io::Result<()> {
    let rt = Runtime::new()?;
    rt.block_on(async {
        let (mut w, mut r) = tickless::io::pipe()?;
        let done = Rc::new(Cell::new(false));
        let d = done.clone();
        let waiting = Rc::new(Cell::new(false));
        let wt = waiting.clone();
        // The reader runs first and finds the pipe empty: only an epoll event can wake it.
        let reader = spawn_local(async move {
            wt.set(true);
            let mut byte = [0u8; 1];
            r.read_exact(&mut byte).await?;
            d.set(true);
            Ok::<_, io::Error>(byte[0])
        });
        let (spin, spins) = spinner(done);
        until(|| waiting.get()).await;
        w.write_all(b"x").await?;
        assert_eq!(reader.await.unwrap()?, b'x');
        spin.await.unwrap();
        assert!(spins.get() > 0, "the spinner never ran");
        Ok(())
    })
}

#[test]
fn block_on_inside_block_on_panics() -> io::Result<()> {
    const NESTED: &str = "cannot start a tickless runtime from within a runtime";
    let outer = Runtime::new()?;
    let inner = Runtime::new()?;
    outer.block_on(async {
        // Another runtime...
        let err = catch_unwind(AssertUnwindSafe(|| inner.block_on(async {}))).unwrap_err();
        assert!(
            panic_message(&*err).contains(NESTED),
            "{}",
            panic_message(&*err)
        );
        // ...or the same one.
        let err = catch_unwind(AssertUnwindSafe(|| outer.block_on(async {}))).unwrap_err();
        assert!(
            panic_message(&*err).contains(NESTED),
            "{}",
            panic_message(&*err)
        );
        // The outer runtime is unharmed.
        assert_eq!(spawn(async { 3 }).await.unwrap(), 3);
    });
    // And the inner one works once the outer has returned.
    assert_eq!(
        inner.block_on(async { spawn(async { 4 }).await.unwrap() }),
        4
    );
    Ok(())
}

#[test]
fn block_on_inside_a_task_panics() -> io::Result<()> {
    let rt = Runtime::new()?;
    let message = rt.block_on(async {
        spawn_local(async {
            let nested = Runtime::new().unwrap();
            let err = catch_unwind(AssertUnwindSafe(|| nested.block_on(async {}))).unwrap_err();
            panic_message(&*err)
        })
        .await
        .unwrap()
    });
    assert!(
        message.contains("cannot start a tickless runtime from within a runtime"),
        "{message}"
    );
    Ok(())
}

#[test]
fn alive_tasks_counts_tasks_until_they_are_dropped() -> std::io::Result<()> {
    let rt = tickless::Builder::new().cores(1).build()?;
    rt.block_on(async {
        let stats = || rt.stats().cores[0].alive_tasks;
        assert_eq!(stats(), 0);
        let handles: Vec<_> = (0..50)
            .map(|_| tickless::spawn(std::future::pending::<()>()))
            .collect();
        tickless::task::yield_now().await;
        assert_eq!(stats(), 50, "polled once each, alive");
        for h in &handles {
            h.abort();
        }
        for h in handles {
            assert!(h.await.unwrap_err().is_cancelled());
        }
        let done: Vec<_> = (0..20).map(|i| tickless::spawn(async move { i })).collect();
        for h in done {
            h.await.unwrap();
        }
        assert_eq!(stats(), 0, "finished and aborted tasks leave the set");
    });
    Ok(())
}

#[test]
fn aborting_a_spawn_at_task_that_has_started_sends_nothing_through_the_inbox() -> io::Result<()> {
    // Once its timer fired, a spawn_at task is an ordinary task: its abort reaches it through
    // its waker and abort flag, not as an operation handed to the core.
    let rt = paused()?;
    let core0 = rt.handle(0);
    rt.block_on(async {
        let task = core0.spawn_at(Instant::now() + Duration::from_secs(1), async {
            std::future::pending::<()>().await
        });
        // Let the deadline come (paused time jumps) and the task start.
        tickless::time::sleep(Duration::from_secs(2)).await;
        yield_now().await;
        assert!(!task.is_finished());
        let before = rt.stats().total;
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        let d = rt.stats().total - before;
        assert_eq!(
            (d.remote_wakes_sent, d.remote_wakes_avoided, d.timer_cancels),
            (0, 0, 0),
            "nothing handed over, no timer to cancel: {d:?}"
        );
    });
    Ok(())
}

#[test]
fn a_handle_polled_by_a_second_waker_wakes_that_one() -> io::Result<()> {
    use std::future::Future;
    use std::task::{Context, Poll, Wake, Waker};

    /// Counts its wakes.
    struct Counting(AtomicUsize);
    impl Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let rt = tickless::Builder::new().cores(2).build()?;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let mut handle = rt.handle(1).spawn(async move {
        while rx.try_recv().is_err() {
            tickless::task::yield_now().await;
        }
        9
    });
    let first = Arc::new(Counting(AtomicUsize::new(0)));
    let second = Arc::new(Counting(AtomicUsize::new(0)));
    let poll = |w: &Arc<Counting>, h: &mut tickless::JoinHandle<i32>| {
        let waker = Waker::from(w.clone());
        std::pin::Pin::new(h).poll(&mut Context::from_waker(&waker))
    };
    assert!(poll(&first, &mut handle).is_pending());
    // The handle moved to another awaiter: the second waker replaces the first.
    assert!(poll(&second, &mut handle).is_pending());
    tx.send(()).unwrap();
    // Bounded by a count, not a time: the task on core 1 finishes within a few turns.
    for _ in 0..10_000 {
        if second.0.load(Ordering::SeqCst) > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        second.0.load(Ordering::SeqCst),
        1,
        "the second waker is woken"
    );
    assert_eq!(
        first.0.load(Ordering::SeqCst),
        0,
        "the replaced waker is not woken"
    );
    assert!(matches!(poll(&second, &mut handle), Poll::Ready(Ok(9))));
    assert!(
        format!("{handle:?}").contains("finished: true"),
        "{handle:?}"
    );
    Ok(())
}
