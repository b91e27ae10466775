//! The blocking pool: work off the core, threads on demand up to the cap, results through the
//! inbox, panics and aborts, shutdown.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

use tickless::task::{spawn_blocking, JoinSet};
use tickless::Builder;

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
