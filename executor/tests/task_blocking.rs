//! The blocking pool: work off the core, threads on demand up to the cap, results through the
//! inbox, panics and aborts, shutdown.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

use tickless::task::{spawn_blocking, JoinSet};
use tickless::{Builder, Runtime};

#[test]
fn a_blocking_job_runs_off_the_core_and_its_result_comes_back() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    let core_thread = std::thread::current().id();
    let (ran_on, sum) = rt.block_on(async {
        spawn_blocking(|| (std::thread::current().id(), (1..=100u32).sum::<u32>()))
            .await
            .unwrap()
    });
    assert_ne!(ran_on, core_thread, "not on the core's thread");
    assert_eq!(sum, 5050);
    assert_eq!(
        rt.stats().blocking_threads,
        1,
        "one thread, started on demand"
    );
    Ok(())
}

#[test]
fn the_core_keeps_serving_while_a_job_blocks() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    let before = rt.stats().total;
    rt.block_on(async {
        let (tx, rx) = mpsc::channel::<()>();
        let job = spawn_blocking(move || rx.recv().unwrap());
        // The core runs other tasks and fires timers meanwhile, then releases the job.
        let mut set = JoinSet::new();
        for i in 0..100u32 {
            set.spawn(async move {
                tickless::time::sleep(Duration::from_micros(u64::from(i % 10) + 1)).await;
                i
            });
        }
        let mut n = 0;
        while set.join_next().await.is_some() {
            n += 1;
        }
        assert_eq!(n, 100);
        assert!(!job.is_finished(), "the job still blocks");
        tx.send(()).unwrap();
        job.await.unwrap();
    });
    let d = rt.stats().total - before;
    assert_eq!(
        d.timer_fires, 100,
        "every sleep fired while the job blocked: {d:?}"
    );
    assert!(d.polls >= 200, "each task polled at least twice: {d:?}");
    // The job's result reached the core through its inbox: a remote wake, sent or avoided.
    assert!(d.remote_wakes_sent + d.remote_wakes_avoided >= 1, "{d:?}");
    Ok(())
}

#[test]
fn threads_are_capped_and_extra_jobs_queue() -> io::Result<()> {
    let rt = Builder::new().cores(1).max_blocking_threads(2).build()?;
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let mut set = JoinSet::new();
        for _ in 0..8 {
            let (running, most) = (running.clone(), most.clone());
            set.spawn(async move {
                spawn_blocking(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(2));
                    running.fetch_sub(1, Ordering::SeqCst);
                })
                .await
                .unwrap()
            });
        }
        while let Some(r) = set.join_next().await {
            r.unwrap();
        }
    });
    assert!(most.load(Ordering::SeqCst) <= 2, "cap of 2 threads");
    assert!(rt.stats().blocking_threads <= 2);
    Ok(())
}

#[test]
fn idle_threads_retire_after_the_keep_alive() -> io::Result<()> {
    let rt = Builder::new()
        .cores(1)
        .thread_keep_alive(Duration::from_millis(1))
        .build()?;
    rt.block_on(async { spawn_blocking(|| ()).await.unwrap() });
    // Wait for the thread to retire: bounded by a count of polls, not by time.
    for _ in 0..10_000 {
        if rt.stats().blocking_threads == 0 {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("the idle blocking thread never retired");
}

#[test]
fn a_panicking_job_is_its_handle_s_error() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let err = spawn_blocking(|| panic!("bad hash")).await.unwrap_err();
        assert!(err.is_panic());
        assert!(err.to_string().contains("bad hash"), "{err}");
        // The pool still works.
        assert_eq!(spawn_blocking(|| 7).await.unwrap(), 7);
    });
    assert_eq!(rt.stats().total.task_panics, 1);
    Ok(())
}

#[test]
fn an_aborted_job_that_has_not_started_never_runs() -> io::Result<()> {
    let rt = Builder::new().cores(1).max_blocking_threads(1).build()?;
    let ran = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let gate = Arc::new(Barrier::new(2));
        let g = gate.clone();
        // Occupies the only thread until the barrier.
        let first = spawn_blocking(move || {
            g.wait();
        });
        let r = ran.clone();
        let second = spawn_blocking(move || {
            r.fetch_add(1, Ordering::SeqCst);
        });
        // Let both tasks queue their jobs.
        for _ in 0..3 {
            tickless::task::yield_now().await;
        }
        second.abort();
        assert!(second.await.unwrap_err().is_cancelled());
        gate.wait();
        first.await.unwrap();
        // The aborted job was skipped: the thread is free, a third job runs.
        assert_eq!(spawn_blocking(|| 3).await.unwrap(), 3);
    });
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    Ok(())
}

#[test]
fn a_handle_runs_blocking_work_for_its_core() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let h = rt.handle(1).spawn_blocking(|| 40 + 2);
    assert_eq!(h.join().unwrap(), 42);
    Ok(())
}

#[test]
fn shutdown_waits_for_running_jobs_and_drops_queued_ones() -> io::Result<()> {
    let rt = Builder::new().cores(1).max_blocking_threads(1).build()?;
    let finished = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(Barrier::new(2));
    let (f, s) = (finished.clone(), started.clone());
    let (running, queued) = rt.block_on(async move {
        let running = spawn_blocking(move || {
            s.wait();
            std::thread::sleep(Duration::from_millis(5));
            f.fetch_add(1, Ordering::SeqCst);
        });
        let queued = spawn_blocking(|| unreachable!("never started: dropped at shutdown"));
        for _ in 0..3 {
            tickless::task::yield_now().await;
        }
        (running, queued)
    });
    started.wait();
    rt.shutdown(Duration::MAX).unwrap();
    assert_eq!(
        finished.load(Ordering::SeqCst),
        1,
        "the running job finished"
    );
    assert!(
        running.join().unwrap_err().is_cancelled(),
        "its task was dropped"
    );
    assert!(queued.join().unwrap_err().is_cancelled());
    Ok(())
}

/// How long a test waits for something that a deadlock would keep from happening. Only a hang
/// breaker: a passing run never comes near it, and nothing is asserted about time; a deadlock
/// becomes a failed assertion with a message instead of a test that never ends.
const DEADLOCK_GUARD: Duration = Duration::from_secs(30);

/// A barrier of `n` parties whose wait gives up after [`DEADLOCK_GUARD`]: `true` if all `n`
/// arrived (each was running at once).
#[derive(Clone)]
struct Meeting(Arc<(std::sync::Mutex<usize>, std::sync::Condvar)>, usize);

impl Meeting {
    fn new(n: usize) -> Meeting {
        Meeting(Arc::default(), n)
    }

    fn arrive(&self) -> bool {
        let (count, cv) = &*self.0;
        let mut c = count.lock().unwrap();
        *c += 1;
        cv.notify_all();
        let (c, _) = cv
            .wait_timeout_while(c, DEADLOCK_GUARD, |c| *c < self.1)
            .unwrap();
        *c >= self.1
    }
}

/// Leaves a pool thread idle: a job runs, and the core waits until the pool counts a thread
/// waiting for work (the thread completes the job's slot before it goes back to wait).
async fn one_idle_thread(rt: &Runtime) {
    spawn_blocking(|| ()).await.unwrap();
    let start = std::time::Instant::now();
    while rt.stats().blocking_idle_threads == 0 {
        assert!(start.elapsed() < DEADLOCK_GUARD, "no pool thread went idle");
        std::thread::yield_now();
    }
}

#[test]
fn a_burst_where_the_first_job_waits_for_the_second_completes() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    for _ in 0..20 {
        let got = rt.block_on(async {
            // An idle thread, which the first job's notify wakes: before the fix the second
            // submit saw it still counted idle, notified it again and started no thread, so the
            // second job queued behind the first, which waited for it.
            one_idle_thread(&rt).await;
            let (tx, rx) = mpsc::channel::<u32>();
            let a = spawn_blocking(move || rx.recv_timeout(DEADLOCK_GUARD));
            let b = spawn_blocking(move || tx.send(7).unwrap());
            b.await.unwrap();
            a.await.unwrap()
        });
        assert_eq!(got, Ok(7), "the first job never saw the second run");
    }
    Ok(())
}

#[test]
fn jobs_submitted_together_run_on_as_many_threads() -> io::Result<()> {
    const N: usize = 8;
    let rt = Builder::new().cores(1).build()?;
    let (all_met, threads) = rt.block_on(async {
        one_idle_thread(&rt).await;
        let meeting = Meeting::new(N);
        // Spawned in one go, submitted at their first polls in one turn of the core.
        let jobs: Vec<_> = (0..N)
            .map(|_| {
                let m = meeting.clone();
                spawn_blocking(move || (m.arrive(), std::thread::current().id()))
            })
            .collect();
        let mut all_met = true;
        let mut threads = std::collections::HashSet::new();
        for j in jobs {
            let (met, id) = j.await.unwrap();
            all_met &= met;
            threads.insert(id);
        }
        (all_met, threads.len())
    });
    assert!(all_met, "the {N} jobs were never all running at once");
    assert_eq!(threads, N, "each job on a thread of its own");
    assert!(rt.stats().blocking_threads >= N);
    Ok(())
}

#[test]
fn an_idle_thread_takes_the_next_job() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        // One thread, idle.
        one_idle_thread(&rt).await;
        assert_eq!(rt.stats().blocking_threads, 1);
        spawn_blocking(|| ()).await.unwrap();
    });
    // Woken for the job, rather than a thread started next to it.
    assert_eq!(rt.stats().blocking_threads, 1, "the idle thread ran it");
    Ok(())
}

/// A value whose destructor panics: a closure that captures it panics when dropped unrun.
struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("PanicOnDrop dropped");
        }
    }
}

#[test]
fn a_cancelled_job_whose_closure_panics_in_drop_keeps_its_thread() -> io::Result<()> {
    let rt = Builder::new().cores(1).max_blocking_threads(1).build()?;
    let got = rt.block_on(async {
        let (tx, rx) = mpsc::channel::<()>();
        // Occupies the only thread until released.
        let first = spawn_blocking(move || rx.recv().unwrap());
        let bomb = PanicOnDrop;
        let second = spawn_blocking(move || drop(bomb));
        for _ in 0..3 {
            tickless::task::yield_now().await;
        }
        // Cancelled before it starts: the thread skips it, dropping the closure (which panics).
        second.abort();
        assert!(second.await.unwrap_err().is_cancelled());
        tx.send(()).unwrap();
        first.await.unwrap();
        // The one thread is still there to run a later job.
        tickless::time::timeout(DEADLOCK_GUARD, spawn_blocking(|| 3)).await
    });
    assert_eq!(got.expect("the later job never ran").unwrap(), 3);
    assert_eq!(rt.stats().blocking_threads, 1);
    // Nothing is left running: shutdown finds no blocking work.
    rt.shutdown(DEADLOCK_GUARD).expect("no blocking job left");
    Ok(())
}

#[test]
fn a_queued_job_that_panics_in_drop_does_not_escape_shutdown() -> io::Result<()> {
    let rt = Builder::new().cores(1).max_blocking_threads(1).build()?;
    let (tx, rx) = mpsc::channel::<()>();
    let (started_tx, started_rx) = mpsc::channel::<()>();
    rt.block_on(async {
        // Runs through the shutdown: released only after it returned.
        drop(spawn_blocking(move || {
            started_tx.send(()).unwrap();
            rx.recv().unwrap();
        }));
        let bomb = PanicOnDrop;
        drop(spawn_blocking(move || drop(bomb)));
        for _ in 0..3 {
            tickless::task::yield_now().await;
        }
    });
    started_rx.recv().unwrap();
    // The queued job is dropped by the pool's close, its closure panicking there; the running
    // one is still running when the (short) timeout passes, whatever the machine's speed.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.shutdown(Duration::from_millis(1))
    }));
    tx.send(()).unwrap();
    let err = result
        .expect("a panic escaped shutdown")
        .expect_err("one job was still running");
    assert_eq!(err.blocking, 1);
    assert!(err.stuck.is_empty() && err.panicked.is_empty(), "{err:?}");
    assert_eq!(
        err.to_string(),
        "1 blocking job still running at the shutdown timeout (its thread was left running, \
         detached)"
    );
    Ok(())
}

#[test]
fn the_shutdown_error_says_what_blocking_work_was_left() {
    let err = tickless::ShutdownError {
        stuck: vec![],
        panicked: vec![],
        blocking: 3,
        leaked_local: 0,
    };
    assert_eq!(
        err.to_string(),
        "3 blocking jobs still running at the shutdown timeout (their threads were left \
         running, detached)"
    );
    let err = tickless::ShutdownError {
        stuck: vec![2],
        panicked: vec![],
        blocking: 1,
        leaked_local: 0,
    };
    assert_eq!(
        err.to_string(),
        "cores [2] did not stop within the shutdown timeout (a task never yields?); 1 blocking \
         job still running at the shutdown timeout (its thread was left running, detached)"
    );
}

#[test]
fn paused_time_does_not_jump_while_a_blocking_job_runs() -> io::Result<()> {
    let rt = Builder::new().cores(1).start_paused(true).build()?;
    let got = rt.block_on(async {
        let start = tickless::time::Instant::now();
        let job = spawn_blocking(|| std::thread::sleep(Duration::from_millis(50)));
        let r = tickless::time::timeout(Duration::from_secs(100), job).await;
        (r, start.elapsed())
    });
    let (r, paused_elapsed) = got;
    assert!(r.is_ok(), "the timeout fired while the job ran");
    assert!(r.unwrap().is_ok());
    assert!(
        paused_elapsed < Duration::from_secs(100),
        "paused time jumped to the timeout: {paused_elapsed:?}"
    );
    Ok(())
}

#[test]
fn paused_time_does_not_jump_while_files_are_read() -> io::Result<()> {
    let dir = std::env::temp_dir().join(format!("tickless-paused-fs-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("data");
    std::fs::write(&path, b"tickless")?;
    let rt = Builder::new().cores(1).start_paused(true).build()?;
    let elapsed = rt.block_on(async {
        let mut elapsed = 0;
        for _ in 0..100 {
            match tickless::time::timeout(Duration::from_secs(1), tickless::fs::read(&path)).await {
                Ok(data) => assert_eq!(data?, b"tickless"),
                Err(_) => elapsed += 1,
            }
        }
        io::Result::Ok(elapsed)
    })?;
    std::fs::remove_dir_all(&dir)?;
    assert_eq!(elapsed, 0, "reads that timed out under paused time");
    Ok(())
}

#[test]
fn a_blocking_closure_runs_in_its_core_s_runtime() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let (core, spawned, nested) = rt
        .handle(1)
        .spawn(async {
            spawn_blocking(|| {
                // No core runs here, but the runtime is the spawning core's, as on tokio.
                let handle = tickless::Handle::try_current().expect("a blocking thread's handle");
                let current = tickless::Handle::current();
                assert_eq!(current.core(), handle.core());
                // `spawn` from the blocking thread spawns onto that core, and its handle can
                // be waited for there.
                let spawned = tickless::spawn(async { tickless::core_id() }).join();
                // The handle's own blocking work runs in the same context.
                let nested = current
                    .spawn_blocking(|| tickless::Handle::current().core())
                    .join();
                (handle.core(), spawned.unwrap(), nested.unwrap())
            })
            .await
        })
        .join()
        .unwrap()
        .unwrap();
    assert_eq!((core, spawned, nested), (1, 1, 1));
    Ok(())
}

#[test]
fn outside_a_runtime_try_current_is_an_error_and_current_panics() {
    let err = tickless::Handle::try_current().unwrap_err();
    assert!(err.is_missing_context());
    assert!(!err.is_thread_local_destroyed());
    assert!(err.to_string().contains("no tickless runtime"), "{err}");
    let panic = std::panic::catch_unwind(tickless::Handle::current).unwrap_err();
    let msg = panic.downcast_ref::<&str>().map(|s| s.to_string());
    let msg = msg
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap();
    assert!(msg.contains("tickless runtime"), "{msg}");
    // `TryCurrentError` is at tokio's path, and an `Error`.
    let _: &dyn std::error::Error = &err as &tickless::runtime::TryCurrentError;
}

#[test]
fn try_current_from_a_thread_local_s_destructor_says_the_thread_local_is_destroyed() {
    /// Sends what `try_current` says when the thread exits.
    struct AtExit(mpsc::Sender<Result<(), tickless::runtime::TryCurrentError>>);
    impl Drop for AtExit {
        fn drop(&mut self) {
            let _ = self.0.send(tickless::Handle::try_current().map(drop));
        }
    }
    thread_local! {
        static AT_EXIT: std::cell::RefCell<Option<AtExit>> = const { std::cell::RefCell::new(None) };
    }
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // Registered first, so destroyed last (the thread-locals' destructors run in the
        // reverse order of their first use): after the runtime's, which `try_current` uses.
        AT_EXIT.with(|a| *a.borrow_mut() = Some(AtExit(tx)));
        assert!(tickless::Handle::try_current().is_err());
    })
    .join()
    .unwrap();
    let err = rx.recv().unwrap().unwrap_err();
    assert!(err.is_thread_local_destroyed(), "{err:?}");
    assert!(!err.is_missing_context());
}
