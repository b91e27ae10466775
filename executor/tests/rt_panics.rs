//! Panics in user code the runtime runs: a task future (or output) whose destructor panics,
//! dropped by an abort, a shutdown, a detached end or a dropped handle, on core 0 and on
//! another core; wakers that panic when the core wakes them (a timer, I/O readiness, a task
//! completing on another core); a task that panics in its poll; and `JoinHandle::join` on the
//! task's own core. None of them may take a core or the process down, and each is counted.
//!
//! Counters, never durations: core 0's counters are exact; another core's are read once it
//! has gone back to sleep (it publishes them at each idle transition).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use futures_lite::future::{pending, poll_once};
use futures_lite::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tickless::time::sleep;
use tickless::{spawn, yield_now, Builder, CoreStats, JoinError, Runtime};

/// What a `Bomb`'s destructor panics with.
const BOMB: &str = "bomb";

/// Counts its drop, then panics in it.
struct Bomb(Arc<AtomicUsize>);

impl Drop for Bomb {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("{BOMB}");
    }
}

/// Counts its drops (and does not panic).
struct Guard(Arc<AtomicUsize>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A waker whose wake panics; counts the attempts.
struct PanicWaker(AtomicUsize);

impl Wake for PanicWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("waker panics on purpose");
    }
}

fn panic_waker() -> (Arc<PanicWaker>, Waker) {
    let w = Arc::new(PanicWaker(AtomicUsize::new(0)));
    (w.clone(), Waker::from(w))
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

fn one_core() -> io::Result<Runtime> {
    Builder::new().cores(1).build()
}

fn paused() -> io::Result<Runtime> {
    Builder::new().cores(1).start_paused(true).build()
}

fn two_cores() -> io::Result<Runtime> {
    Builder::new().cores(2).build()
}

/// A task that holds a `Bomb` and waits for ever.
fn bomb_task(bombs: &Arc<AtomicUsize>) -> impl Future<Output = ()> + Send + 'static {
    let bomb = Bomb(bombs.clone());
    async move {
        let _bomb = bomb;
        pending::<()>().await
    }
}

/// Hang guard: waits (really) until `cond` holds. A count of short sleeps, not a deadline
/// asserted on: the condition is what the test checks.
fn wait_for(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..200_000 {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    panic!("never happened: {what}");
}

/// Core 1's counters once it sleeps again (when it has published them).
fn core1_parked_stats(rt: &Runtime) -> CoreStats {
    let h = rt.handle(1);
    wait_for("core 1 sleeps", || h.is_parked());
    rt.stats().cores[1]
}

/// Yields until `cond` holds, a bounded number of times.
async fn until(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..1_000 {
        if cond() {
            return;
        }
        yield_now().await;
    }
    panic!("never happened: {what}");
}

/// The message of a panicked task's error.
fn panic_text(e: JoinError) -> String {
    assert!(e.is_panic(), "{e:?}");
    let payload = e.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

// --- 1. Destructors that panic. ---

#[test]
fn an_aborted_task_whose_destructor_panics_gives_the_panic_to_its_handle() -> io::Result<()> {
    let rt = one_core()?;
    let bombs = counter();
    let b = bombs.clone();
    rt.block_on(async move {
        let h = spawn(bomb_task(&b));
        yield_now().await; // polled once: it waits
        assert!(!h.is_finished());
        h.abort();
        let err = h.await.unwrap_err();
        assert!(!err.is_cancelled());
        assert_eq!(panic_text(err), BOMB);
        // The core runs on.
        assert_eq!(spawn(async { 5 }).await.unwrap(), 5);
    });
    assert_eq!(bombs.load(Ordering::SeqCst), 1);
    let s = rt.stats().total;
    assert_eq!(
        (s.drop_panics, s.task_panics, s.wake_panics),
        (1, 0, 0),
        "{s:?}"
    );
    Ok(())
}

#[test]
fn a_task_aborted_before_its_first_poll_whose_future_panics_in_drop() -> io::Result<()> {
    let rt = one_core()?;
    let bombs = counter();
    let b = bombs.clone();
    rt.block_on(async move {
        let h = spawn(bomb_task(&b));
        h.abort(); // never polled
        assert!(h.await.unwrap_err().is_panic());
    });
    assert_eq!(bombs.load(Ordering::SeqCst), 1);
    assert_eq!(rt.stats().total.drop_panics, 1);
    Ok(())
}

#[test]
fn dropping_a_runtime_with_a_task_whose_destructor_panics() -> io::Result<()> {
    let rt = one_core()?;
    let (bombs, guards) = (counter(), counter());
    let (b, g) = (bombs.clone(), guards.clone());
    let (bomb, quiet) = rt.block_on(async move {
        let bomb = spawn(bomb_task(&b));
        // A well-behaved task next to it must still be dropped.
        let guard = Guard(g);
        let quiet = spawn(async move {
            let _guard = guard;
            pending::<()>().await
        });
        yield_now().await;
        (bomb, quiet)
    });
    drop(rt);
    assert_eq!(bombs.load(Ordering::SeqCst), 1);
    assert_eq!(guards.load(Ordering::SeqCst), 1);
    assert_eq!(panic_text(bomb.join().unwrap_err()), BOMB);
    assert!(quiet.join().unwrap_err().is_cancelled());
    Ok(())
}

#[test]
fn shutting_down_a_runtime_with_a_task_whose_destructor_panics() -> io::Result<()> {
    let rt = one_core()?;
    let bombs = counter();
    // Spawned from outside, polled in `block_on`.
    let bomb = rt.handle(0).spawn(bomb_task(&bombs));
    rt.block_on(async {
        for _ in 0..3 {
            yield_now().await;
        }
    });
    assert!(!bomb.is_finished());
    assert_eq!(rt.shutdown(Duration::from_secs(10)), Ok(()));
    assert_eq!(bombs.load(Ordering::SeqCst), 1);
    assert_eq!(panic_text(bomb.join().unwrap_err()), BOMB);
    Ok(())
}

#[test]
fn a_detached_task_whose_destructor_panics_is_dropped_at_shutdown() -> io::Result<()> {
    let (bombs, guards) = (counter(), counter());
    for shutdown in [false, true] {
        let rt = one_core()?;
        let (b, g) = (bombs.clone(), guards.clone());
        rt.block_on(async move {
            drop(spawn(bomb_task(&b)));
            let guard = Guard(g);
            drop(spawn(async move {
                let _guard = guard;
                pending::<()>().await
            }));
            yield_now().await;
        });
        assert_eq!(rt.stats().total.drop_panics, 0, "nothing dropped yet");
        if shutdown {
            assert_eq!(rt.shutdown(Duration::from_secs(10)), Ok(()));
        } else {
            drop(rt);
        }
    }
    assert_eq!(bombs.load(Ordering::SeqCst), 2);
    assert_eq!(guards.load(Ordering::SeqCst), 2);
    Ok(())
}

#[test]
fn an_output_whose_destructor_panics_and_that_nobody_takes_is_dropped_and_counted() -> io::Result<()>
{
    let rt = one_core()?;
    let bombs = counter();
    let b = bombs.clone();
    rt.block_on(async move {
        // The handle is dropped first: the core drops the output when the task completes.
        let bomb = Bomb(b.clone());
        drop(spawn(async move {
            yield_now().await;
            bomb
        }));
        until("the first output is dropped", || {
            b.load(Ordering::SeqCst) == 1
        })
        .await;
        // The task completes first: dropping its handle drops the output it holds.
        let bomb = Bomb(b.clone());
        let h = spawn(async move { bomb });
        until("the second task completes", || h.is_finished()).await;
        assert_eq!(b.load(Ordering::SeqCst), 1);
        drop(h);
        assert_eq!(b.load(Ordering::SeqCst), 2);
        assert_eq!(spawn(async { 5 }).await.unwrap(), 5);
    });
    assert_eq!(bombs.load(Ordering::SeqCst), 2);
    let s = rt.stats().total;
    assert_eq!((s.drop_panics, s.task_panics), (2, 0), "{s:?}");
    Ok(())
}

#[test]
fn destructors_that_panic_on_another_core_are_caught_there() -> io::Result<()> {
    let rt = two_cores()?;
    let bombs = counter();
    // Aborted.
    let aborted = rt.handle(1).spawn(bomb_task(&bombs));
    wait_for("core 1 polled the task", || rt.handle(1).is_parked());
    aborted.abort();
    assert_eq!(panic_text(aborted.join().unwrap_err()), BOMB);
    assert_eq!(core1_parked_stats(&rt).drop_panics, 1);
    // A detached output: the task completes only once its handle is gone.
    let bomb = Bomb(bombs.clone());
    let detached = Arc::new(AtomicBool::new(false));
    let d = detached.clone();
    drop(rt.handle(1).spawn(async move {
        while !d.load(Ordering::Acquire) {
            yield_now().await;
        }
        bomb
    }));
    detached.store(true, Ordering::Release);
    wait_for("the output is dropped", || {
        bombs.load(Ordering::SeqCst) == 2
    });
    assert_eq!(core1_parked_stats(&rt).drop_panics, 2);
    // Core 1 runs on.
    assert_eq!(rt.handle(1).spawn(async { 7 }).join().unwrap(), 7);
    // Dropped by the shutdown, one awaited and one detached.
    let awaited = rt.handle(1).spawn(bomb_task(&bombs));
    drop(rt.handle(1).spawn(bomb_task(&bombs)));
    assert_eq!(rt.handle(1).spawn(async { 8 }).join().unwrap(), 8);
    assert_eq!(rt.shutdown(Duration::from_secs(10)), Ok(()));
    assert_eq!(bombs.load(Ordering::SeqCst), 4);
    assert_eq!(panic_text(awaited.join().unwrap_err()), BOMB);
    Ok(())
}

// --- 2. Wakers that panic. ---

#[test]
fn a_waker_that_panics_when_its_timer_fires_is_counted_and_the_core_runs_on() -> io::Result<()> {
    let rt = paused()?;
    let (bad, waker) = panic_waker();
    rt.block_on(async {
        let mut s = sleep(Duration::from_millis(1));
        assert!(Pin::new(&mut s)
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        // The clock jumps to 1 ms (the bad waker fires), then to 2 ms.
        sleep(Duration::from_millis(2)).await;
        assert_eq!(bad.0.load(Ordering::SeqCst), 1);
        // The sleep did fire: the wheel forgot it.
        assert_eq!(poll_once(&mut s).await, Some(()));
        assert_eq!(spawn(async { 5 }).await.unwrap(), 5);
        sleep(Duration::from_millis(1)).await;
    });
    let s = rt.stats().total;
    assert_eq!((s.wake_panics, s.timer_fires), (1, 3), "{s:?}");
    assert_eq!(rt.block_on(async { 6 }), 6);
    Ok(())
}

#[test]
fn a_waker_that_panics_on_io_readiness_is_counted_and_the_core_runs_on() -> io::Result<()> {
    let rt = paused()?;
    let (bad, waker) = panic_waker();
    rt.block_on(async {
        let (mut w, mut r) = tickless::io::pipe()?;
        let mut buf = [0u8; 4];
        let polled = Pin::new(&mut r).poll_read(&mut Context::from_waker(&waker), &mut buf);
        assert!(polled.is_pending());
        w.write_all(b"ping").await?;
        // Going idle polls I/O first: the pipe's readiness wakes the bad waker.
        sleep(Duration::from_millis(1)).await;
        assert_eq!(bad.0.load(Ordering::SeqCst), 1);
        // The reader still works, with a waker that behaves.
        r.read_exact(&mut buf).await?;
        assert_eq!(&buf, b"ping");
        io::Result::Ok(())
    })?;
    assert_eq!(rt.stats().total.wake_panics, 1);
    Ok(())
}

#[test]
fn a_waker_that_panics_when_a_task_completes_on_another_core_is_counted_there() -> io::Result<()> {
    let rt = two_cores()?;
    let go = Arc::new(AtomicBool::new(false));
    let g = go.clone();
    let mut h = rt.handle(1).spawn(async move {
        while !g.load(Ordering::Acquire) {
            sleep(Duration::from_micros(100)).await;
        }
        7
    });
    // Await the handle with the bad waker (from this thread), then let the task complete: core
    // 1 wakes the waiter, and the wake panics there.
    let (bad, waker) = panic_waker();
    assert!(Pin::new(&mut h)
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    go.store(true, Ordering::Release);
    wait_for("the task completes", || h.is_finished());
    assert_eq!(bad.0.load(Ordering::SeqCst), 1);
    // The output was stored before the wake: it is there to take.
    assert_eq!(futures_lite::future::block_on(h).unwrap(), 7);
    // Core 1 runs on, and counted the panic.
    assert_eq!(rt.handle(1).spawn(async { 8 }).join().unwrap(), 8);
    assert_eq!(core1_parked_stats(&rt).wake_panics, 1);
    assert_eq!(rt.shutdown(Duration::from_secs(10)), Ok(()));
    Ok(())
}

// --- 3. A task that panics in its poll. ---

#[test]
fn a_task_that_panics_in_poll_is_counted_once() -> io::Result<()> {
    let rt = two_cores()?;
    let err = rt.block_on(async {
        spawn(async {
            yield_now().await;
            panic!("poll panics on purpose")
        })
        .await
        .unwrap_err()
    });
    assert_eq!(panic_text(err), "poll panics on purpose");
    let s = rt.stats().cores[0];
    assert_eq!((s.task_panics, s.drop_panics), (1, 0), "{s:?}");
    // On core 1.
    let err = rt
        .handle(1)
        .spawn(async { panic!("core 1 poll panics") })
        .join()
        .unwrap_err();
    assert_eq!(panic_text(err), "core 1 poll panics");
    assert_eq!(core1_parked_stats(&rt).task_panics, 1);
    assert_eq!(rt.stats().total.task_panics, 2);
    assert_eq!(rt.handle(1).spawn(async { 3 }).join().unwrap(), 3);
    Ok(())
}

#[test]
fn a_task_that_panics_in_poll_and_again_in_its_destructor() -> io::Result<()> {
    /// Panics in its poll; the `Bomb` it holds is not unwound by that panic (it is a field,
    /// not a local of the poll), so it goes off when the core drops the panicked future.
    struct PanicsInPoll(#[allow(dead_code)] Bomb);
    impl Future for PanicsInPoll {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> std::task::Poll<()> {
            panic!("first panic")
        }
    }
    let rt = one_core()?;
    let bombs = counter();
    let b = bombs.clone();
    let err = rt.block_on(async move { spawn(PanicsInPoll(Bomb(b))).await.unwrap_err() });
    // The poll's panic is the task's error; the destructor's is only counted.
    assert_eq!(panic_text(err), "first panic");
    assert_eq!(bombs.load(Ordering::SeqCst), 1);
    let s = rt.stats().total;
    assert_eq!((s.task_panics, s.drop_panics), (1, 1), "{s:?}");
    Ok(())
}

// --- 6. `JoinHandle::join` on the task's own core. ---

/// What `join` on the task's own core panics with (a part of it).
const JOIN_ON_OWN_CORE: &str = "`.await` the handle instead";

#[test]
#[should_panic(expected = "`.await` the handle instead")]
fn join_in_block_on_for_a_task_of_the_same_core_panics() {
    let rt = one_core().unwrap();
    rt.block_on(async {
        let h = spawn(async { 1 });
        let _ = h.join();
    });
}

#[test]
#[should_panic(expected = "`.await` the handle instead")]
fn join_on_core_0_s_thread_outside_block_on_panics() {
    // Core 0 runs only inside `block_on`: joining one of its tasks from its thread outside
    // would wait forever.
    let rt = two_cores().unwrap();
    let _ = rt.handle(0).spawn(async { 1 }).join();
}

#[test]
fn join_from_another_thread_on_a_core_0_task_waits_for_block_on() -> io::Result<()> {
    let rt = one_core()?;
    let h = rt.handle(0).spawn(async { 5 });
    let joiner = std::thread::spawn(move || h.join().unwrap());
    rt.block_on(async {
        // Bounded by a count of turns; each turn sleeps a little so the joiner can run.
        for _ in 0..10_000 {
            if joiner.is_finished() {
                return;
            }
            tickless::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        panic!("the joiner never got its value");
    });
    assert_eq!(joiner.join().unwrap(), 5);
    Ok(())
}

#[test]
fn join_in_a_task_for_a_task_of_its_own_core_panics_saying_to_await() -> io::Result<()> {
    let rt = two_cores()?;
    let ran = counter();
    let r = ran.clone();
    let err = rt.block_on(async move {
        spawn(async move {
            let inner = spawn(async move {
                r.fetch_add(1, Ordering::SeqCst);
            });
            inner.join()
        })
        .await
        .unwrap_err()
    });
    assert!(panic_text(err).contains(JOIN_ON_OWN_CORE));
    // On core 1 too.
    let err = rt
        .handle(1)
        .spawn(async {
            let inner = spawn(async { 2 });
            inner.join()
        })
        .join()
        .unwrap_err();
    assert!(panic_text(err).contains(JOIN_ON_OWN_CORE));
    // Joining a task of another core from a task is allowed (it blocks this core only).
    let on_1 = rt.handle(1).spawn(async { 3 });
    let out = rt.block_on(async move { spawn(async move { on_1.join() }).await });
    assert_eq!(out.unwrap().unwrap(), 3);
    // The detached inner task of core 0 still ran.
    rt.block_on(until("the inner task runs", || {
        ran.load(Ordering::SeqCst) == 1
    }));
    assert_eq!(rt.stats().cores[0].task_panics, 1);
    assert_eq!(core1_parked_stats(&rt).task_panics, 1);
    Ok(())
}
