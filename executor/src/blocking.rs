//! The blocking pool: threads for work that would stall a core (a password hash, a file read,
//! a name lookup), started on demand up to a cap, retired after a keep-alive idle.
//!
//! # Protocol
//!
//! `spawn_blocking` spawns an ordinary task on the caller's core whose future queues the job
//! here at its first poll and then waits on the job's result slot. A pool thread runs the job
//! (under `catch_unwind`) and completes the slot, whose wake reaches the core through its inbox
//! like any remote wake: written to the eventfd only if the core sleeps. Aborting the task
//! before a thread took the job cancels it (the job is skipped); once it runs, it runs to the
//! end, as in tokio. At shutdown the runtime closes the pool: queued jobs are dropped, and it
//! waits (within the shutdown's timeout) for the running ones.
//!
//! # Accounting
//!
//! The pool's lock guards exact counts, as tokio's pool keeps them. `idle` counts threads
//! waiting for work that nobody has woken yet: whoever wakes one (a submit, a thread that takes
//! a job and leaves others queued) lowers it there and then and raises `notified`, which the
//! woken thread takes back down. A burst of submits therefore sees the idle threads it already
//! woke as busy, and starts threads for the rest: two jobs submitted together run on two
//! threads, so a job that waits for the next one does not deadlock (before this, the woken
//! thread lowered `idle` itself, every submit until then saw "an idle thread", and a burst ran
//! one job at a time on one thread). `loom-tests/tests/blocking_pool.rs` runs this code and
//! fails with the old accounting put back.
//!
//! Threads are started one at a time (`starting`), and mostly by the pool's own threads: a
//! thread that takes a job and leaves jobs queued that no woken or starting thread will take
//! starts the next one before running its job. A burst of submits from a core thus costs that
//! core one thread start, not one per job. A start that fails while no thread is alive fails the
//! queued jobs (their tasks panic with the error, see [`Fate::Fail`]) instead of leaving them
//! queued for ever.
//!
//! Every job is settled under a panic guard (run, skipped, failed, dropped at close), and a
//! thread's place in the count is given back by a guard, so a panic of a user's destructor
//! costs neither a thread nor the runtime's shutdown.
//!
//! `in_flight` counts the jobs queued or running. A core whose clock is paused does not jump it
//! while the count is above zero (the job's result may be what ends the wait, as in tokio); it
//! registers a waker that the pool wakes when the count falls to zero. A job's slot is
//! completed (its task woken through the inbox) before the job leaves the count, so a core
//! that sees the count at zero also sees that wake.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use crate::catch::drop_caught;
use crate::sync::{lock, AtomicBool, Condvar, Mutex, MutexGuard, Ordering};
use crate::task::join_error::JoinError;
use crate::task::join_slot::JoinSlot;

/// What becomes of a job: a pool thread runs it, or the pool fails it because no thread could
/// be started to run it.
pub enum Fate<'a> {
    /// A pool thread runs it now (or skips it, if its task is gone).
    Run,
    /// No thread is alive and none could be started (`spawn` failed with this error): the job
    /// will never run. A `spawn_blocking` job completes its slot with a panic that says so.
    Fail(&'a io::Error),
}

/// A job: told its fate once, it runs the user's closure and leaves its result in its slot (or
/// leaves a failure there); dropped instead (the pool closed), it leaves "cancelled".
pub type Job = Box<dyn FnOnce(Fate<'_>) + Send>;

/// How the pool starts a thread: std's threads in production, loom's in the models, failing or
/// counting ones in tests.
pub trait StartThread: Send + Sync + 'static {
    /// Starts a thread that runs `main`.
    ///
    /// # Errors
    ///
    /// The thread could not be started (`EAGAIN`: too many threads or too little memory).
    fn start(&self, main: Box<dyn FnOnce() + Send>) -> io::Result<()>;
}

/// Named std threads.
pub struct StdThreads;

impl StartThread for StdThreads {
    fn start(&self, main: Box<dyn FnOnce() + Send>) -> io::Result<()> {
        thread::Builder::new()
            .name("tickless-blocking".into())
            .spawn(main)
            .map(drop)
    }
}

/// The default cap on blocking threads, tokio's.
pub(crate) const DEFAULT_MAX_THREADS: usize = 512;
/// How long an idle blocking thread waits for work before it retires, tokio's default.
pub(crate) const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// What the pool's lock guards.
struct State {
    /// Jobs not yet taken by a thread.
    queue: VecDeque<Job>,
    /// Threads alive, or being started.
    threads: usize,
    /// Threads waiting for work that nobody has woken.
    idle: usize,
    /// Threads woken for work that have not yet woken up (each takes one of these back).
    notified: usize,
    /// A thread start is under way: the thread will take a job when it runs.
    starting: bool,
    /// Jobs accepted and not yet settled: queued or running.
    in_flight: usize,
    /// Woken, and removed, when `in_flight` falls to zero (the cores whose paused clocks wait
    /// for blocking work), each under its key (a core's index: one waker per core).
    watchers: Vec<(usize, Waker)>,
    /// Closed: no new job is accepted, idle threads exit.
    closed: bool,
}

impl State {
    /// Takes the watchers if nothing is in flight, for the caller to wake after unlocking.
    fn idle_watchers(&mut self) -> Vec<(usize, Waker)> {
        if self.in_flight == 0 {
            std::mem::take(&mut self.watchers)
        } else {
            Vec::new()
        }
    }
}

/// A runtime's blocking pool.
pub struct BlockingPool<S: StartThread = StdThreads> {
    /// Jobs and threads.
    state: Mutex<State>,
    /// Signalled when a job is queued for an idle thread, or the pool closes.
    work: Condvar,
    /// Signalled when a thread exits.
    exited: Condvar,
    /// The most threads at once.
    max_threads: usize,
    /// How long an idle thread lingers.
    keep_alive: Duration,
    /// How threads are started.
    starter: S,
}

impl BlockingPool {
    /// A pool of std threads, with no thread yet.
    pub(crate) fn new(max_threads: usize, keep_alive: Duration) -> Arc<BlockingPool> {
        BlockingPool::with_starter(max_threads, keep_alive, StdThreads)
    }
}

impl<S: StartThread> BlockingPool<S> {
    /// A pool whose threads `starter` starts, with no thread yet.
    pub fn with_starter(max_threads: usize, keep_alive: Duration, starter: S) -> Arc<Self> {
        Arc::new(BlockingPool {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                threads: 0,
                idle: 0,
                notified: 0,
                starting: false,
                in_flight: 0,
                watchers: Vec::new(),
                closed: false,
            }),
            work: Condvar::new(),
            exited: Condvar::new(),
            max_threads: max_threads.max(1),
            keep_alive,
            starter,
        })
    }

    /// Queues `job`, waking an idle thread for it or starting one. Returns the job back if the
    /// pool is closed.
    ///
    /// # Errors
    ///
    /// The pool is closed: the job is handed back.
    pub fn submit(self: &Arc<Self>, job: Job) -> Result<(), Job> {
        let mut s = lock(&self.state);
        if s.closed {
            return Err(job);
        }
        s.queue.push_back(job);
        s.in_flight += 1;
        let start = self.dispatch(&mut s);
        drop(s);
        if start {
            self.start_thread();
        }
        Ok(())
    }

    /// Provides for the queued jobs: wakes idle threads for the jobs no woken thread will
    /// take, counting each wake now (not when the thread wakes up); then, if jobs are still
    /// left over, no start is under way and the cap allows, reserves a thread start (counted in
    /// `threads`) for the caller to make with [`start_thread`](Self::start_thread) after
    /// unlocking. Returns whether it reserved one.
    fn dispatch(&self, s: &mut State) -> bool {
        while s.idle > 0 && s.queue.len() > s.notified {
            s.idle -= 1;
            s.notified += 1;
            self.work.notify_one();
        }
        if s.queue.len() > s.notified && !s.starting && s.threads < self.max_threads {
            s.threads += 1;
            s.starting = true;
            return true;
        }
        false
    }

    /// Starts the thread [`dispatch`](Self::dispatch) reserved. If it cannot be started and no
    /// thread is alive, nobody will ever take the queued jobs: they fail with the error.
    fn start_thread(self: &Arc<Self>) {
        let pool = self.clone();
        let Err(e) = self.starter.start(Box::new(move || pool.worker())) else {
            return;
        };
        let mut s = lock(&self.state);
        s.threads -= 1;
        s.starting = false;
        if s.threads > 0 {
            // A live thread takes the queued jobs in its time (a thread waits or exits only
            // with the queue empty), and starts another one then if it still can.
            return;
        }
        let failed = std::mem::take(&mut s.queue);
        s.in_flight -= failed.len();
        let watchers = s.idle_watchers();
        drop(s);
        for job in failed {
            settle(job, Fate::Fail(&e));
        }
        wake_all(watchers);
    }

    /// A pool thread: takes jobs until idle for the keep-alive, or the pool closes.
    fn worker(self: Arc<Self>) {
        let mut alive = Alive {
            pool: &self,
            counted: true,
        };
        let mut s = lock(&self.state);
        // This thread is the start that was under way.
        s.starting = false;
        loop {
            if let Some(job) = s.queue.pop_front() {
                // Jobs left that nobody will take: start a thread for them before this job
                // (which may wait for one of them) runs.
                let start = self.dispatch(&mut s);
                drop(s);
                if start {
                    self.start_thread();
                }
                settle(job, Fate::Run);
                s = lock(&self.state);
                // After the job completed its slot: see "Accounting".
                s.in_flight -= 1;
                let watchers = s.idle_watchers();
                if !watchers.is_empty() {
                    drop(s);
                    wake_all(watchers);
                    s = lock(&self.state);
                }
                continue;
            }
            if s.closed {
                break;
            }
            s.idle += 1;
            let (guard, timeout) = self
                .work
                .wait_timeout(s, self.keep_alive)
                .unwrap_or_else(|e| e.into_inner());
            s = guard;
            if s.notified > 0 {
                // Woken for work (whoever notified lowered `idle`). The notifications are not
                // addressed: a thread that wakes by itself may take one meant for another,
                // which then wakes to find `notified` at zero and lowers `idle` itself; the
                // counts stay exact either way.
                s.notified -= 1;
                continue;
            }
            s.idle -= 1;
            if timeout.timed_out() && s.queue.is_empty() {
                break;
            }
        }
        // Under the same lock as the decision to exit: a submit that comes after sees one
        // thread fewer and starts another if the cap allows.
        s.threads -= 1;
        alive.counted = false;
        drop(s);
        self.exited.notify_all();
    }

    /// Closes the pool: drops the queued jobs (their tasks see a cancelled result), wakes the
    /// idle threads, and waits until `deadline` (or for ever, if `None`) for the running ones.
    /// Returns how many jobs were still running when it gave up.
    pub fn close(&self, deadline: Option<Instant>) -> usize {
        let (queued, watchers) = {
            let mut s = lock(&self.state);
            s.closed = true;
            let queued = std::mem::take(&mut s.queue);
            s.in_flight -= queued.len();
            (queued, s.idle_watchers())
        };
        self.work.notify_all();
        for job in queued {
            drop_caught(job);
        }
        wake_all(watchers);
        let mut s = lock(&self.state);
        while s.threads > 0 {
            s = match deadline {
                None => self.exited.wait(s).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    self.exited
                        .wait_timeout(s, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
        s.in_flight
    }

    /// Whether jobs are queued or running. If so, `waker` (made by `make` unless one is
    /// registered under `key` already) is woken when the last one settles.
    pub fn wake_when_idle(&self, key: usize, make: impl FnOnce() -> Waker) -> bool {
        let mut s = lock(&self.state);
        if s.in_flight == 0 {
            return false;
        }
        if !s.watchers.iter().any(|(k, _)| *k == key) {
            s.watchers.push((key, make()));
        }
        true
    }

    /// Threads alive, and of those the idle ones: waiting for work, not yet woken for any (for
    /// stats, tests and the models).
    pub fn counts(&self) -> (usize, usize) {
        let s = lock(&self.state);
        (s.threads, s.idle)
    }

    /// Jobs queued and not yet taken by a thread.
    pub fn queued(&self) -> usize {
        lock(&self.state).queue.len()
    }
}

/// Settles a job under a panic guard (the job guards its own user code; this one keeps a
/// thread alive whatever escapes it).
fn settle(job: Job, fate: Fate<'_>) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| job(fate))) {
        drop_caught(payload);
    }
}

/// Wakes the watchers taken from the state.
fn wake_all(watchers: Vec<(usize, Waker)>) {
    for (_, w) in watchers {
        crate::catch::wake_caught(w);
    }
}

/// A pool thread's place in `threads`, given back if the thread unwinds (a panic that the job
/// guards missed), so that the count never includes a thread that is gone: with a cap of one,
/// such a thread would otherwise keep every later job waiting for ever.
struct Alive<'a, S: StartThread> {
    /// The pool.
    pool: &'a Arc<BlockingPool<S>>,
    /// The thread is still counted: the normal exit clears this under the lock.
    counted: bool,
}

impl<S: StartThread> Drop for Alive<'_, S> {
    fn drop(&mut self) {
        if !self.counted {
            return;
        }
        let start = {
            let mut s: MutexGuard<'_, State> = lock(&self.pool.state);
            s.threads -= 1;
            // Jobs may be left with no thread: start another for them.
            !s.closed && self.pool.dispatch(&mut s)
        };
        self.pool.exited.notify_all();
        if start {
            self.pool.start_thread();
        }
    }
}

/// The message of the panic a `spawn_blocking` task ends with when no thread could run it.
fn no_thread_message(e: &io::Error) -> String {
    format!("tickless: the blocking pool could not start a thread for this job: {e}")
}

/// The result slot of one blocking job, and whether its task gave up on it.
struct JobState<T> {
    /// Where the job's result goes.
    slot: JoinSlot<Result<T, JoinError>>,
    /// The task was dropped before the job started: skip it.
    cancelled: AtomicBool,
}

/// The future of a `spawn_blocking` task: queues the job at its first poll, then waits for its
/// result.
pub(crate) struct BlockingTask<F, T, S: StartThread = StdThreads> {
    /// The closure, until queued.
    f: Option<F>,
    /// The pool.
    pool: Arc<BlockingPool<S>>,
    /// The job's result, shared with the pool thread.
    state: Arc<JobState<T>>,
}

impl<F, T, S: StartThread> BlockingTask<F, T, S> {
    /// The task that runs `f` on `pool`.
    pub(crate) fn new(pool: Arc<BlockingPool<S>>, f: F) -> Self {
        BlockingTask {
            f: Some(f),
            pool,
            state: Arc::new(JobState {
                slot: JoinSlot::new(),
                cancelled: AtomicBool::new(false),
            }),
        }
    }
}

impl<F, T, S: StartThread> Unpin for BlockingTask<F, T, S> {}

/// The job that runs `f` and leaves its result in `state`'s slot.
fn job<F, T>(f: F, state: Arc<JobState<T>>) -> Job
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let done = CompleteOnDrop(state);
    Box::new(move |fate| match fate {
        Fate::Run if !done.0.cancelled.load(Ordering::Acquire) => {
            let result = catch_unwind(AssertUnwindSafe(f)).map_err(JoinError::panic);
            done.complete(result);
        }
        // Its task is gone: skipped. The closure's captures are the user's, dropped under the
        // guard; `done` then completes the slot as cancelled.
        Fate::Run => drop_caught(f),
        Fate::Fail(e) => {
            drop_caught(f);
            done.complete(Err(JoinError::panic(Box::new(no_thread_message(e)))));
        }
    })
}

impl<F, T, S> Future for BlockingTask<F, T, S>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
    S: StartThread,
{
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        if let Some(f) = self.f.take() {
            if self.pool.submit(job(f, self.state.clone())).is_err() {
                panic!("the runtime's blocking pool is shut down: no new blocking work");
            }
        }
        match self.state.slot.poll_take(cx) {
            Poll::Ready(Ok(v)) => Poll::Ready(v),
            // The closure's panic (or the pool's failure to start a thread for it) becomes
            // this task's panic, caught by the task's harness.
            Poll::Ready(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // The job was dropped unstarted: the pool closed, which happens only while the
            // runtime shuts down, and the shutdown drops this task next (its handle then
            // resolves as cancelled).
            Poll::Ready(Err(_)) | Poll::Pending => Poll::Pending,
        }
    }
}

/// Completes a job's slot as cancelled if the job is dropped without completing it (a closed
/// pool drops its queued jobs, or the job was skipped).
struct CompleteOnDrop<T>(Arc<JobState<T>>);

impl<T> CompleteOnDrop<T> {
    /// Completes the slot with the job's result (the drop that follows changes nothing).
    fn complete(&self, result: Result<T, JoinError>) {
        // The waiting task may be gone by now: then the result is dropped here.
        if let Some(unclaimed) = self.0.slot.complete(result) {
            drop_caught(unclaimed);
        }
    }
}

impl<T> Drop for CompleteOnDrop<T> {
    fn drop(&mut self) {
        self.complete(Err(JoinError::cancelled()));
    }
}

impl<F, T, S: StartThread> Drop for BlockingTask<F, T, S> {
    fn drop(&mut self) {
        // Aborted (or shut down) before the result came: a job not yet started is skipped.
        self.state.cancelled.store(true, Ordering::Release);
        if let Some(unclaimed) = self.state.slot.detach() {
            drop_caught(unclaimed);
        }
    }
}

// Two attributes, not `all(..)`: cargo-mutants leaves a `#[cfg(test)]` module alone.
#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Mutex as StdMutex;
    use std::thread::ThreadId;

    /// Never runs out in these tests.
    const KEEP_ALIVE: Duration = Duration::from_secs(60);

    /// A thread start that always fails, counting the attempts.
    #[derive(Default)]
    struct NoThreads(std::sync::atomic::AtomicUsize);

    impl StartThread for NoThreads {
        fn start(&self, _main: Box<dyn FnOnce() + Send>) -> io::Result<()> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Err(io::Error::from_raw_os_error(libc::EAGAIN))
        }
    }

    /// How long a test waits for something a deadlock would keep from happening: only a hang
    /// breaker, never reached by a passing run.
    const DEADLOCK_GUARD: Duration = Duration::from_secs(30);

    /// Polls `task` once, outside any runtime; `Err` with the panic's message if it panicked.
    fn poll_once<F: Future + Unpin>(task: &mut F) -> Result<Poll<F::Output>, String> {
        let mut cx = Context::from_waker(Waker::noop());
        catch_unwind(AssertUnwindSafe(|| Pin::new(task).poll(&mut cx)))
            .map_err(|p| crate::task::join_error::panic_message(&*p))
    }

    #[test]
    fn a_failed_start_with_no_thread_alive_fails_the_job() {
        let pool = BlockingPool::with_starter(4, KEEP_ALIVE, NoThreads::default());
        let mut task = BlockingTask::new(pool.clone(), || 5);
        let message = poll_once(&mut task).expect_err("the job failed, and its task with it");
        assert!(
            message.contains("could not start a thread") && message.contains("os error 11"),
            "{message}"
        );
        assert_eq!(pool.starter.0.load(std::sync::atomic::Ordering::Relaxed), 1);
        let s = lock(&pool.state);
        assert!(s.queue.is_empty(), "the job was not left queued");
        assert_eq!((s.threads, s.in_flight, s.starting), (0, 0, false));
        drop(s);
        // A later job tries again, and fails the same way.
        let mut task = BlockingTask::new(pool.clone(), || 6);
        assert!(poll_once(&mut task).is_err());
        assert_eq!(pool.starter.0.load(std::sync::atomic::Ordering::Relaxed), 2);
        assert_eq!(pool.close(None), 0);
    }

    /// A job that does nothing.
    fn nothing() -> Job {
        Box::new(|_| {})
    }

    #[test]
    fn dispatch_wakes_an_idle_thread_per_job_and_counts_it_at_once() {
        let pool = BlockingPool::with_starter(4, KEEP_ALIVE, NoThreads::default());
        let mut s = lock(&pool.state);
        // Two threads alive and idle (as the pool's own threads would leave them).
        (s.threads, s.idle) = (2, 2);
        s.queue.push_back(nothing());
        assert!(!pool.dispatch(&mut s), "an idle thread takes it: no start");
        assert_eq!((s.idle, s.notified), (1, 1), "counted at the notify");
        assert!(
            !pool.dispatch(&mut s),
            "nothing more to do for the same queue"
        );
        assert_eq!((s.idle, s.notified), (1, 1));
        s.queue.push_back(nothing());
        assert!(!pool.dispatch(&mut s));
        assert_eq!((s.idle, s.notified), (0, 2));
        // No idle thread left: the third job needs a start, and a fourth waits for it.
        s.queue.push_back(nothing());
        assert!(pool.dispatch(&mut s), "a start for the third job");
        assert_eq!((s.threads, s.starting), (3, true));
        s.queue.push_back(nothing());
        assert!(!pool.dispatch(&mut s), "one start at a time");
        assert_eq!(s.threads, 3);
        // The start made, the next take asks again; the cap stops it at four.
        s.starting = false;
        assert!(pool.dispatch(&mut s));
        assert_eq!(s.threads, 4);
        s.starting = false;
        s.queue.push_back(nothing());
        assert!(!pool.dispatch(&mut s), "the cap");
        assert_eq!(s.threads, 4);
        s.queue.clear();
    }

    /// A waker that sends on a channel when woken.
    struct Signal(StdMutex<mpsc::Sender<()>>);

    impl std::task::Wake for Signal {
        fn wake(self: Arc<Self>) {
            let _ = self.0.lock().unwrap().send(());
        }
    }

    #[test]
    fn a_watcher_is_woken_once_when_the_last_job_settles() {
        let pool = BlockingPool::new(2, KEEP_ALIVE);
        assert!(!pool.wake_when_idle(0, || unreachable!("idle: nothing to register")));
        let (release, gate) = (mpsc::channel::<()>(), mpsc::channel::<()>());
        let (release_tx, release_rx) = release;
        let (gate_tx, gate_rx) = gate;
        let (woken_tx, woken) = mpsc::channel();
        let waker = Waker::from(Arc::new(Signal(StdMutex::new(woken_tx))));
        // Two jobs in flight, each until released.
        assert!(pool
            .submit(Box::new(move |_| release_rx.recv().unwrap()))
            .is_ok());
        assert!(pool
            .submit(Box::new(move |_| gate_rx.recv().unwrap()))
            .is_ok());
        let mut made = 0;
        for _ in 0..2 {
            // Registered once per key, however often the core asks.
            assert!(pool.wake_when_idle(7, || {
                made += 1;
                waker.clone()
            }));
        }
        assert_eq!(made, 1);
        release_tx.send(()).unwrap();
        let start = Instant::now();
        while lock(&pool.state).in_flight > 1 {
            assert!(
                start.elapsed() < DEADLOCK_GUARD,
                "the first job never settled"
            );
            thread::yield_now();
        }
        // One job still runs: no wake yet, and the core stays registered.
        assert!(
            woken.try_recv().is_err(),
            "woken with a job still in flight"
        );
        assert!(pool.wake_when_idle(7, || unreachable!("still registered")));
        gate_tx.send(()).unwrap();
        assert_eq!(woken.recv_timeout(DEADLOCK_GUARD), Ok(()), "never woken");
        assert!(!pool.wake_when_idle(7, || unreachable!("idle again")));
        assert_eq!(pool.close(None), 0);
        assert!(woken.try_recv().is_err(), "woken once");
    }

    /// Starts std threads that wait for `go` before they run, recording which thread asked.
    struct GatedThreads {
        /// The threads that called `start`, in order.
        callers: StdMutex<Vec<ThreadId>>,
        /// Opened once the burst is submitted.
        go: Arc<(StdMutex<bool>, std::sync::Condvar)>,
    }

    impl StartThread for GatedThreads {
        fn start(&self, main: Box<dyn FnOnce() + Send>) -> io::Result<()> {
            self.callers.lock().unwrap().push(thread::current().id());
            let go = self.go.clone();
            thread::Builder::new().spawn(move || {
                let (open, cv) = &*go;
                drop(cv.wait_while(open.lock().unwrap(), |o| !*o).unwrap());
                main();
            })?;
            Ok(())
        }
    }

    #[test]
    fn a_burst_costs_the_submitting_thread_one_thread_start() {
        const N: usize = 8;
        let go = Arc::new((StdMutex::new(false), std::sync::Condvar::new()));
        let starter = GatedThreads {
            callers: StdMutex::new(Vec::new()),
            go: go.clone(),
        };
        let pool = BlockingPool::with_starter(N, KEEP_ALIVE, starter);
        // Every job waits until all N run at once (or the guard passes): each needs a thread
        // of its own.
        let met = Arc::new((StdMutex::new(0), std::sync::Condvar::new()));
        let (tx, rx) = mpsc::channel();
        for _ in 0..N {
            let (met, tx) = (met.clone(), tx.clone());
            let job: Job = Box::new(move |fate| {
                assert!(matches!(fate, Fate::Run));
                let (count, cv) = &*met;
                let mut c = count.lock().unwrap();
                *c += 1;
                cv.notify_all();
                let (c, _) = cv
                    .wait_timeout_while(c, DEADLOCK_GUARD, |c| *c < N)
                    .unwrap();
                tx.send((*c == N, thread::current().id())).unwrap();
            });
            assert!(pool.submit(job).is_ok());
        }
        // The first start is still under way (its thread waits at the gate): no other submit
        // started one.
        assert_eq!(pool.starter.callers.lock().unwrap().len(), 1);
        *go.0.lock().unwrap() = true;
        go.1.notify_all();
        let ran: Vec<(bool, ThreadId)> = rx.iter().take(N).collect();
        assert!(
            ran.iter().all(|r| r.0),
            "the {N} jobs were never all running at once"
        );
        let threads: std::collections::HashSet<_> = ran.iter().map(|r| r.1).collect();
        assert_eq!(threads.len(), N, "each job on a thread of its own");
        let callers = pool.starter.callers.lock().unwrap().clone();
        assert_eq!(callers.len(), N, "one start per thread");
        let here = thread::current().id();
        assert_eq!(
            callers.iter().filter(|&&c| c == here).count(),
            1,
            "the submitting thread started one; the pool's threads the rest"
        );
        assert_eq!(pool.close(None), 0);
        assert_eq!(pool.counts(), (0, 0));
    }

    #[test]
    fn a_job_that_unwinds_past_its_own_guard_keeps_its_thread() {
        let pool = BlockingPool::with_starter(1, KEEP_ALIVE, StdThreads);
        assert!(pool.submit(Box::new(|_| panic!("a raw job"))).is_ok());
        let (tx, rx) = mpsc::channel();
        assert!(pool.submit(Box::new(move |_| tx.send(7).unwrap())).is_ok());
        assert_eq!(rx.recv().unwrap(), 7, "the one thread ran the next job");
        assert_eq!(pool.counts().0, 1);
        assert_eq!(pool.close(None), 0);
        assert_eq!(pool.counts(), (0, 0));
    }

    #[test]
    fn a_thread_that_unwinds_gives_its_place_back() {
        let pool = BlockingPool::with_starter(1, KEEP_ALIVE, StdThreads);
        // One thread alive (this test's), and a job queued that it will not take.
        let (tx, ran) = mpsc::channel();
        {
            let mut s = lock(&pool.state);
            s.threads = 1;
            s.in_flight = 1;
            s.queue.push_back(Box::new(move |_| tx.send(()).unwrap()));
        }
        let p = pool.clone();
        let unwound = thread::spawn(move || {
            let _alive = Alive {
                pool: &p,
                counted: true,
            };
            panic!("a pool thread unwinds");
        })
        .join();
        assert!(unwound.is_err());
        // Its place went to a new thread, which ran the job.
        assert_eq!(ran.recv_timeout(DEADLOCK_GUARD), Ok(()), "the job was left");
        assert_eq!(pool.close(None), 0);
        assert_eq!(pool.counts(), (0, 0), "every thread left");
    }

    /// Starts as many std threads as its count, then fails.
    struct ThreadsThenNone(std::sync::atomic::AtomicUsize);

    impl StartThread for ThreadsThenNone {
        fn start(&self, main: Box<dyn FnOnce() + Send>) -> io::Result<()> {
            let relaxed = std::sync::atomic::Ordering::Relaxed;
            if self
                .0
                .fetch_update(relaxed, relaxed, |n| n.checked_sub(1))
                .is_err()
            {
                return Err(io::Error::from_raw_os_error(libc::EAGAIN));
            }
            StdThreads.start(main)
        }
    }

    #[test]
    fn a_failed_start_with_a_thread_alive_leaves_the_job_to_it() {
        let pool = BlockingPool::with_starter(2, KEEP_ALIVE, ThreadsThenNone(1.into()));
        let (started_tx, started) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        assert!(pool
            .submit(Box::new(move |_| {
                started_tx.send(()).unwrap();
                release_rx.recv().unwrap();
            }))
            .is_ok());
        started.recv().unwrap();
        // The one thread is busy: the second job asks for a start, which fails.
        let mut task = BlockingTask::new(pool.clone(), || 2);
        assert_eq!(poll_once(&mut task), Ok(Poll::Pending));
        assert_eq!(pool.counts().0, 1);
        release.send(()).unwrap();
        let start = Instant::now();
        while !task.state.slot.is_finished() {
            assert!(start.elapsed() < DEADLOCK_GUARD, "the job never ran");
            thread::yield_now();
        }
        assert_eq!(poll_once(&mut task), Ok(Poll::Ready(2)), "run, not failed");
        assert_eq!(pool.close(None), 0);
    }

    /// "Starts" a thread that never runs: its jobs stay queued.
    struct Stillborn;

    impl StartThread for Stillborn {
        fn start(&self, _main: Box<dyn FnOnce() + Send>) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_job_dropped_by_the_close_leaves_its_task_pending_and_its_slot_cancelled() {
        let pool = BlockingPool::with_starter(1, KEEP_ALIVE, Stillborn);
        let mut task = BlockingTask::new(pool.clone(), || 1);
        assert_eq!(poll_once(&mut task), Ok(Poll::Pending));
        // The "thread" never exits: give up at once.
        assert_eq!(pool.close(Some(Instant::now())), 0, "the job never ran");
        assert!(task.state.slot.is_finished(), "the slot says cancelled");
        // The runtime drops the task next: until then it waits, rather than panic.
        assert_eq!(poll_once(&mut task), Ok(Poll::Pending));
    }
}
