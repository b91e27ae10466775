//! The blocking pool (`tickless`'s `spawn_blocking`), on the production code: its submit,
//! notify and idle accounting, the thread starts a thread makes for the jobs it leaves queued,
//! its close, and the wake it gives a paused core when its last job settles. Pool threads are
//! loom threads (the pool is generic over how it starts them); the keep-alive never runs out
//! under loom (its `wait_timeout` does not time out), so threads leave only at the close.
//!
//! A burst of two jobs where the first waits for the second completes, and when its submits
//! return the pool already has a thread for each job (with the old accounting, where a woken
//! thread lowered the idle count itself, the second submit saw the woken thread as idle and
//! started none); no job is lost or settled twice at the close, and the thread count returns to
//! zero; a core that finds the pool busy is woken when its last job settles, and one that
//! finds it idle sees that job's hand-over.
#![cfg(loom)]

use std::future::poll_fn;
use std::io;
// `std`'s `Arc`, as in the executor: the pool's `Arc<Self>` receivers and `Waker` need it.
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Condvar, Mutex};
use loom::thread;
use tickless::loom_exports::{BlockingPool, Fate, Job, StartThread};

/// Starts pool threads as loom threads.
struct LoomThreads;

impl StartThread for LoomThreads {
    fn start(&self, main: Box<dyn FnOnce() + Send>) -> io::Result<()> {
        thread::spawn(main);
        Ok(())
    }
}

/// Never runs out under loom.
const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// A flag a job or the model waits on.
#[derive(Default)]
struct Gate {
    /// Opened.
    open: Mutex<bool>,
    /// Signalled when opened.
    opened: Condvar,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }
}

/// How the jobs were settled.
#[derive(Default)]
struct Settled {
    /// Jobs run.
    ran: AtomicUsize,
    /// Jobs gone, run or not (their captures dropped): none is left in the pool.
    gone: AtomicUsize,
}

/// Counts its job's end in `gone` when dropped.
struct Token(Arc<Settled>);

impl Drop for Token {
    fn drop(&mut self) {
        self.0.gone.fetch_add(1, Ordering::Relaxed);
    }
}

/// A job that runs `f`, counting in `settled` that it ran, and that it is gone (run, failed,
/// or dropped unrun at the close).
fn job(settled: &Arc<Settled>, f: impl FnOnce() + Send + 'static) -> Job {
    let token = Token(settled.clone());
    Box::new(move |fate| {
        if let Fate::Run = fate {
            f();
            token.0.ran.fetch_add(1, Ordering::Relaxed);
        }
    })
}

/// A burst of two jobs, the first waiting for the second, on a pool of at most two threads
/// that has one thread already (`warm`: it ran a job, and goes idle before the burst or during
/// it, as loom chooses) or none.
fn burst(warm: bool) {
    let pool = BlockingPool::with_starter(2, KEEP_ALIVE, LoomThreads);
    let settled = Arc::new(Settled::default());
    if warm {
        let ran = Arc::new(Gate::default());
        let r = ran.clone();
        assert!(pool.submit(job(&settled, move || r.open())).is_ok());
        ran.wait();
    }
    let (b_ran, done) = (Arc::new(Gate::default()), Arc::new(Gate::default()));
    let (b, d) = (b_ran.clone(), done.clone());
    assert!(pool
        .submit(job(&settled, move || {
            b.wait();
            d.open();
        }))
        .is_ok());
    let b = b_ran.clone();
    assert!(pool.submit(job(&settled, move || b.open())).is_ok());
    if warm {
        // Two jobs that may each block, and a thread woken for the first: the second submit
        // started a thread for the second (the old accounting counted the woken thread as
        // idle still, and started none).
        assert_eq!(
            pool.counts().0,
            2,
            "threads when the burst's submits return"
        );
    }
    // Cold, the first submit's start is under way and the second starts none: the thread
    // that takes a job starts the next. A second job never taken is a deadlock: loom says so.
    done.wait();
    assert_eq!(pool.close(None), 0, "nothing runs after the close");
    assert_eq!(pool.counts(), (0, 0), "every thread left");
    let jobs = 2 + usize::from(warm);
    assert_eq!(settled.ran.load(Ordering::Relaxed), jobs);
    assert_eq!(settled.gone.load(Ordering::Relaxed), jobs);
}

#[test]
fn a_burst_where_the_first_job_waits_for_the_second_completes() {
    loom::model(|| burst(true));
}

#[test]
fn a_cold_burst_where_the_first_job_waits_for_the_second_completes() {
    loom::model(|| burst(false));
}

#[test]
fn the_close_loses_no_job_and_every_thread_leaves() {
    loom::model(|| {
        let pool = BlockingPool::with_starter(2, KEEP_ALIVE, LoomThreads);
        let settled = Arc::new(Settled::default());
        for _ in 0..2 {
            assert!(pool.submit(job(&settled, || {})).is_ok());
        }
        // Racing the threads: each job is run or dropped unrun; none stays queued.
        assert_eq!(pool.close(None), 0);
        let (ran, gone) = (
            settled.ran.load(Ordering::Relaxed),
            settled.gone.load(Ordering::Relaxed),
        );
        assert_eq!(gone, 2, "ran {ran}, gone {gone}");
        assert_eq!(pool.counts(), (0, 0), "every thread left");
        // A closed pool refuses work.
        assert!(pool.submit(job(&settled, || {})).is_err());
    });
}

#[test]
fn a_paused_core_is_woken_when_the_last_job_settles() {
    loom::model(|| {
        let pool = BlockingPool::with_starter(1, KEEP_ALIVE, LoomThreads);
        let settled = Arc::new(Settled::default());
        // The job's hand-over to the core's inbox (the completion of its slot).
        let handed_over = Arc::new(AtomicBool::new(false));
        let h = handed_over.clone();
        assert!(pool
            .submit(job(&settled, move || h.store(true, Ordering::Release)))
            .is_ok());
        // The paused core's idle path (`Core::idle_paused`): ask the pool first, then look for
        // work; jump only if the pool is idle, else sleep until woken and go round again. A
        // wake that never comes leaves it parked: loom reports the deadlock.
        loom::future::block_on(poll_fn(|cx| {
            let busy = pool.wake_when_idle(0, || cx.waker().clone());
            let seen = handed_over.load(Ordering::Acquire);
            if busy {
                return Poll::Pending;
            }
            assert!(
                seen,
                "the pool was idle, but its job's hand-over is not visible"
            );
            Poll::Ready(())
        }));
        assert_eq!(pool.close(None), 0);
        assert_eq!(pool.counts(), (0, 0));
    });
}
