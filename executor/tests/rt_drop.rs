//! Dropping a runtime: every pending task's future is dropped (tasks waiting on timers, on I/O,
//! woken but not yet run, woken from another thread during the drop, spawned by a destructor),
//! their handles then give cancelled errors, and sleeps that outlive their runtime are harmless.
//!
//! The file-descriptor side of dropping is in `rt_drop_fds.rs`, alone in its binary.

// The tests hand join handles (futures) out of `block_on` on purpose, to await them after the
// runtime is gone.
#![allow(clippy::async_yields_async)]

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::io;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::Duration;

use futures_lite::future::poll_once;
use futures_lite::AsyncReadExt;
use tickless::time::sleep;
use tickless::{spawn, spawn_local, yield_now, Builder, JoinHandle, Runtime};

/// Tasks sleeping when the runtime is dropped.
const SLEEPERS: usize = 10_000;
/// Tasks reading a pipe that never gets data when the runtime is dropped (2 fds each).
const READERS: usize = 100;
/// Runtimes dropped while a plain thread wakes their tasks.
const ROUNDS: usize = 200;
/// Bare timers (polled `Sleep`s owned by no task) when the runtime is dropped.
const TIMERS: usize = 10_000;

/// Counts its drops.
struct DropGuard(Arc<AtomicUsize>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Yields until `cond` holds.
async fn until(cond: impl Fn() -> bool) {
    while !cond() {
        yield_now().await;
    }
}

/// A future that stays pending and publishes its task's waker in `slot`.
async fn park_and_publish(slot: Arc<Mutex<Option<Waker>>>) {
    poll_fn(|cx| {
        *slot.lock().unwrap() = Some(cx.waker().clone());
        Poll::<()>::Pending
    })
    .await
}

#[test]
fn dropping_a_runtime_drops_every_pending_future() -> io::Result<()> {
    let drops = Arc::new(AtomicUsize::new(0));
    let rt = Runtime::new()?;
    let (handles, timers) = rt.block_on(async {
        let started = Rc::new(Cell::new(0usize));
        let mut handles: Vec<JoinHandle<io::Result<usize>>> = Vec::new();
        for _ in 0..SLEEPERS {
            let guard = DropGuard(drops.clone());
            let started = started.clone();
            handles.push(spawn_local(async move {
                let _guard = guard;
                started.set(started.get() + 1);
                sleep(Duration::from_secs(3600)).await;
                Ok(0)
            }));
        }
        for _ in 0..READERS {
            let guard = DropGuard(drops.clone());
            let started = started.clone();
            let (w, mut r) = tickless::io::pipe()?;
            handles.push(spawn_local(async move {
                let _guard = guard;
                let _writer = w; // kept open: the read never ends
                started.set(started.get() + 1);
                let mut buf = [0u8; 1];
                r.read(&mut buf).await
            }));
        }
        let mut timers = Vec::with_capacity(TIMERS);
        for i in 0..TIMERS {
            let mut s = sleep(Duration::from_secs(3600 + i as u64));
            assert!(poll_once(&mut s).await.is_none());
            timers.push(s);
        }
        until(|| started.get() == SLEEPERS + READERS).await;
        Ok::<_, io::Error>((handles, timers))
    })?;
    let s = rt.stats().total;
    assert_eq!(s.timer_inserts, (SLEEPERS + TIMERS) as u64, "{s:?}");
    assert_eq!((s.timer_fires, s.timer_cancels), (0, 0), "{s:?}");
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    assert!(handles.iter().all(|h| !h.is_finished()));

    drop(rt);
    assert_eq!(drops.load(Ordering::SeqCst), SLEEPERS + READERS);
    // Sleeps that outlive their runtime drop quietly.
    drop(timers);

    // Half the handles are joined from this thread, half awaited on a new runtime.
    let mut handles = handles;
    let second_half = handles.split_off(handles.len() / 2);
    for h in handles {
        assert!(h.is_finished());
        assert!(h.join().unwrap_err().is_cancelled());
    }
    let rt2 = Runtime::new()?;
    rt2.block_on(async {
        for h in second_half {
            assert!(h.await.unwrap_err().is_cancelled());
        }
    });
    Ok(())
}

#[test]
fn dropping_a_paused_runtime_drops_its_sleepers_without_firing_them() -> io::Result<()> {
    let drops = Arc::new(AtomicUsize::new(0));
    let rt = Builder::new().start_paused(true).build()?;
    let handles = rt.block_on(async {
        let handles: Vec<_> = (0..1000u64)
            .map(|i| {
                let guard = DropGuard(drops.clone());
                spawn(async move {
                    let _guard = guard;
                    sleep(Duration::from_millis(1 + i)).await;
                })
            })
            .collect();
        yield_now().await;
        handles
    });
    drop(rt);
    assert_eq!(drops.load(Ordering::SeqCst), 1000);
    for h in handles {
        assert!(h.join().unwrap_err().is_cancelled());
    }
    Ok(())
}

#[test]
fn dropping_a_runtime_with_a_task_woken_but_not_yet_run() -> io::Result<()> {
    let drops = Arc::new(AtomicUsize::new(0));
    let resumed = Arc::new(AtomicBool::new(false));
    let slot = Arc::new(Mutex::new(None));
    let rt = Runtime::new()?;
    let handle = rt.block_on(async {
        let guard = DropGuard(drops.clone());
        let (s, r) = (slot.clone(), resumed.clone());
        let handle = spawn(async move {
            let _guard = guard;
            park_and_publish(s).await;
            r.store(true, Ordering::SeqCst);
        });
        until(|| slot.lock().unwrap().is_some()).await;
        // Wake it and return at once: the task is queued, not yet polled.
        slot.lock().unwrap().take().unwrap().wake();
        handle
    });
    drop(rt);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(
        !resumed.load(Ordering::SeqCst),
        "the woken task ran after block_on"
    );
    assert!(handle.join().unwrap_err().is_cancelled());
    Ok(())
}

#[test]
fn dropping_a_runtime_while_another_thread_keeps_waking_its_task() -> io::Result<()> {
    for _ in 0..20 {
        let drops = Arc::new(AtomicUsize::new(0));
        let slot = Arc::new(Mutex::new(None));
        let stop = Arc::new(AtomicBool::new(false));
        let running = Arc::new(AtomicBool::new(false));
        let rt = Runtime::new()?;
        let handle = rt.block_on(async {
            let guard = DropGuard(drops.clone());
            let s = slot.clone();
            let handle = spawn(async move {
                let _guard = guard;
                // Pending for ever, however often it is woken.
                park_and_publish(s).await;
            });
            until(|| slot.lock().unwrap().is_some()).await;
            handle
        });
        let waker = slot.lock().unwrap().clone().unwrap();
        let (st, run) = (stop.clone(), running.clone());
        let waking = std::thread::spawn(move || {
            let mut wakes = 0u64;
            while !st.load(Ordering::SeqCst) {
                waker.wake_by_ref();
                wakes += 1;
                run.store(true, Ordering::SeqCst);
            }
            // Once more after the runtime is surely gone, and drop the waker there.
            waker.wake();
            wakes
        });
        // Let the thread get going before the drop races it.
        while !running.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        drop(rt);
        stop.store(true, Ordering::SeqCst);
        let wakes = waking
            .join()
            .expect("waking a dropped runtime's task panicked");
        assert!(wakes > 0);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(handle.join().unwrap_err().is_cancelled());
        // The slot's waker outlives the runtime too.
        let last = slot.lock().unwrap().take();
        if let Some(w) = last {
            w.wake();
        }
    }
    Ok(())
}

#[test]
fn a_destructor_that_spawns_during_the_drop_has_its_task_dropped_too() -> io::Result<()> {
    /// Spawns a task holding `inner` when dropped.
    struct SpawnOnDrop {
        inner: Option<DropGuard>,
        spawned: Rc<Cell<bool>>,
    }
    impl Drop for SpawnOnDrop {
        fn drop(&mut self) {
            let inner = self.inner.take();
            self.spawned.set(true);
            drop(spawn_local(async move {
                let _inner = inner;
                sleep(Duration::from_secs(3600)).await;
            }));
        }
    }

    let drops = Arc::new(AtomicUsize::new(0));
    let spawned = Rc::new(Cell::new(false));
    let rt = Runtime::new()?;
    let handle = rt.block_on(async {
        let on_drop = SpawnOnDrop {
            inner: Some(DropGuard(drops.clone())),
            spawned: spawned.clone(),
        };
        let handle = spawn_local(async move {
            let _on_drop = on_drop;
            sleep(Duration::from_secs(3600)).await;
        });
        yield_now().await;
        handle
    });
    drop(rt);
    assert!(spawned.get());
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the task spawned by a destructor during shutdown was not dropped"
    );
    assert!(handle.join().unwrap_err().is_cancelled());
    Ok(())
}

#[test]
fn a_runtime_dropped_inside_another_runtime_drops_its_futures() -> io::Result<()> {
    let drops = Arc::new(AtomicUsize::new(0));
    let inner = Runtime::new()?;
    let handles = inner.block_on(async {
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let guard = DropGuard(drops.clone());
                spawn(async move {
                    let _guard = guard;
                    sleep(Duration::from_secs(3600)).await;
                })
            })
            .collect();
        yield_now().await;
        handles
    });
    let outer = Runtime::new()?;
    outer.block_on(async move { drop(inner) });
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    for h in handles {
        assert!(h.join().unwrap_err().is_cancelled());
    }
    Ok(())
}

/// Both runtimes have a pending task in the same live-task slot: dropping the inner one inside
/// the outer must drop the inner's future, and leave the outer's for the outer's own drop.
#[test]
fn nested_drop_leaves_the_outer_runtime_s_tasks_alone() -> io::Result<()> {
    let drops = Arc::new(AtomicUsize::new(0));
    let pending = |drops: &Arc<AtomicUsize>| {
        let guard = DropGuard(drops.clone());
        spawn(async move {
            let _guard = guard;
            sleep(Duration::from_secs(3600)).await;
        })
    };
    let inner = Builder::new().cores(1).build()?;
    let h1 = inner.block_on(async {
        let h = pending(&drops);
        yield_now().await;
        h
    });
    let outer = Builder::new().cores(1).build()?;
    let h2 = outer.block_on(async {
        let h = pending(&drops);
        yield_now().await;
        drop(inner);
        h
    });
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "only the inner task is gone"
    );
    drop(outer);
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    assert!(h1.join().unwrap_err().is_cancelled());
    assert!(h2.join().unwrap_err().is_cancelled());
    Ok(())
}

#[test]
fn a_sleep_registered_with_a_dropped_runtime_completes_on_another() -> io::Result<()> {
    let rt = Runtime::new()?;
    let mut s = rt.block_on(async {
        let mut s = sleep(Duration::from_millis(1));
        assert!(poll_once(&mut s).await.is_none());
        s
    });
    drop(rt);
    let rt2 = Runtime::new()?;
    rt2.block_on(&mut s);
    assert!(s.is_elapsed());
    assert!(std::time::Instant::now() >= s.deadline().into_std());
    // Whether rt2 needed a timer for it depends on how long the drop took: no count asserted.
    Ok(())
}

#[test]
fn a_runtime_is_reusable_after_block_on_returns_with_tasks_pending() -> io::Result<()> {
    let rt = Runtime::new()?;
    let log = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    let handle = rt.block_on(async move {
        spawn_local(async move {
            for i in 0..3 {
                l.borrow_mut().push(i);
                sleep(Duration::from_micros(100)).await;
            }
            "done"
        })
    });
    // The task is pending between the two calls; the second one drives it to the end.
    assert_eq!(rt.block_on(handle).unwrap(), "done");
    assert_eq!(*log.borrow(), [0, 1, 2]);
    Ok(())
}

/// Shutdown owns its tasks: a task woken on another thread while its core shuts down has its
/// future dropped on the core, never by the waking thread's refused hand-over (which, for a
/// task made on its core, aborts the process). Tasks on core 1 woken in a loop by a plain
/// thread while the runtime drops. A race, so many runtimes: before shutdown took ownership,
/// the test binary aborted in most runs (see the loom model `shutdown_ownership.rs` for the
/// interleaving itself).
#[test]
fn tasks_woken_by_a_plain_thread_while_the_runtime_drops_are_dropped_on_their_core(
) -> io::Result<()> {
    const TASKS: usize = 64;
    for _ in 0..ROUNDS {
        let drops = Arc::new(AtomicUsize::new(0));
        let slots: Vec<Arc<Mutex<Option<Waker>>>> =
            (0..TASKS).map(|_| Arc::new(Mutex::new(None))).collect();
        let rt = Builder::new().cores(2).build()?;
        let handles: Vec<_> = slots
            .iter()
            .map(|slot| {
                let (slot, guard) = (slot.clone(), DropGuard(drops.clone()));
                rt.handle(1).spawn_pinned(move || async move {
                    let _guard = guard;
                    park_and_publish(slot).await;
                })
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicUsize::new(0));
        let waking = {
            let (slots, stop, rounds) = (slots.clone(), stop.clone(), rounds.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    for s in &slots {
                        let waker = s.lock().unwrap().clone();
                        if let Some(w) = waker {
                            w.wake();
                        }
                    }
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        // The core is busy taking wakes when the drop comes.
        while rounds.load(Ordering::Relaxed) < 200 {
            std::thread::yield_now();
        }
        drop(rt);
        stop.store(true, Ordering::Relaxed);
        waking.join().expect("the waking thread panicked");
        assert_eq!(
            drops.load(Ordering::SeqCst),
            TASKS,
            "every future dropped once"
        );
        for h in handles {
            assert!(h.join().unwrap_err().is_cancelled());
        }
    }
    Ok(())
}

#[test]
fn the_waker_a_cancelled_sleep_leaves_the_core_moves_to_the_next_and_goes_with_the_runtime(
) -> io::Result<()> {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let noop = Arc::new(Noop);
    let rt = Runtime::new()?;
    rt.block_on(async {
        let waker = Waker::from(noop.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        let mut first = sleep(Duration::from_secs(10));
        assert!(std::future::Future::poll(std::pin::Pin::new(&mut first), &mut cx).is_pending());
        assert_eq!(Arc::strong_count(&noop), 3, "ours, the test's, the timer's");
        drop(first);
        // The core keeps it for the next sleep of the same waker, which takes it uncloned.
        assert_eq!(Arc::strong_count(&noop), 3);
        let mut second = sleep(Duration::from_secs(10));
        assert!(std::future::Future::poll(std::pin::Pin::new(&mut second), &mut cx).is_pending());
        assert_eq!(Arc::strong_count(&noop), 3, "moved, not cloned");
        drop(second);
    });
    assert_eq!(Arc::strong_count(&noop), 2, "kept until the runtime goes");
    drop(rt);
    assert_eq!(Arc::strong_count(&noop), 1, "dropped with the runtime");
    Ok(())
}

#[test]
fn a_runtime_kept_in_a_thread_local_is_shut_down_at_the_thread_s_exit() {
    // The runtime's thread-local is destroyed at the thread's exit, possibly after tickless's
    // own: its shutdown still enters its core, and drops the pending task's future there
    // (this aborted the process before).
    thread_local! {
        static RT: std::cell::RefCell<Option<Runtime>> = const { std::cell::RefCell::new(None) };
    }
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    std::thread::spawn(move || {
        RT.with(|rt| *rt.borrow_mut() = Some(Builder::new().cores(1).build().unwrap()));
        RT.with(|rt| {
            rt.borrow().as_ref().unwrap().block_on(async move {
                let guard = SetOnDrop(flag);
                drop(spawn_local(async move {
                    let _guard = guard;
                    sleep(Duration::from_secs(3600)).await;
                }));
                yield_now().await;
            })
        });
    })
    .join()
    .expect("the thread exits cleanly");
    assert!(
        dropped.load(Ordering::SeqCst),
        "the pending task's future was dropped"
    );
}

/// A runtime whose last `Arc` is dropped inside one of its own tasks: stopping it there would
/// wait for the core running that very task (before: a 10 s hang in `drop`, for ever in
/// `shutdown(Duration::MAX)`). It panics at once, as tokio's does, and the panic is the task's
/// result, with a message saying what to do.
#[test]
fn a_runtime_dropped_inside_its_own_task_panics_at_once_saying_what_to_do() -> io::Result<()> {
    for shutdown in [false, true] {
        let rt = Arc::new(tickless::Builder::new().cores(2).build()?);
        // A `!Send` future alive on core 0: whatever happens to it, it must not be dropped on
        // core 1's thread (core 0's state is left alone there, leaked, not dropped).
        let dropped_on = Arc::new(std::sync::Mutex::new(None));
        let on = dropped_on.clone();
        rt.block_on(async move {
            let guard = DropThread(on, std::rc::Rc::new(()));
            drop(tickless::task::spawn_local(async move {
                let _guard = guard;
                std::future::pending::<()>().await;
            }));
            tickless::task::yield_now().await;
        });
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let inner = rt.clone();
        let task = rt.handle(1).spawn(async move {
            // Until the outer `Arc` is gone: this task holds the last one.
            wait.recv().unwrap();
            if shutdown {
                let rt = Arc::try_unwrap(inner).expect("the last handle");
                let _ = rt.shutdown(std::time::Duration::MAX);
            } else {
                drop(inner);
            }
        });
        drop(rt);
        go.send(()).unwrap();
        let err = task
            .join()
            .expect_err("dropping its own runtime must panic");
        assert!(err.is_panic());
        let message = err.into_panic();
        let message = message
            .downcast_ref::<String>()
            .expect("a formatted message");
        assert!(
            message.contains("inside one of its own tasks") && message.contains("thread::spawn"),
            "{message}"
        );
        let on = *dropped_on.lock().unwrap();
        assert!(
            on.is_none_or(|t| t == std::thread::current().id()),
            "core 0's `spawn_local` future was dropped on another thread: {on:?}"
        );
    }
    Ok(())
}

/// Records the thread that drops it; `!Send` (its `Rc`), as a `spawn_local` future may be.
struct DropThread(
    Arc<std::sync::Mutex<Option<std::thread::ThreadId>>>,
    #[allow(dead_code)] std::rc::Rc<()>,
);

impl Drop for DropThread {
    fn drop(&mut self) {
        *self.0.lock().unwrap() = Some(std::thread::current().id());
    }
}
