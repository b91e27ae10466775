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

use std::collections::VecDeque;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use crate::sync::{lock, AtomicBool, Condvar, Mutex, Ordering};
use crate::task::join_error::JoinError;
use crate::task::join_slot::JoinSlot;

/// A job: runs the user's closure and leaves its result in its slot.
type Job = Box<dyn FnOnce() + Send>;

/// The default cap on blocking threads, tokio's.
pub(crate) const DEFAULT_MAX_THREADS: usize = 512;
/// How long an idle blocking thread waits for work before it retires, tokio's default.
pub(crate) const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// What the pool's lock guards.
struct State {
    /// Jobs not yet taken by a thread.
    queue: VecDeque<Job>,
    /// Threads alive.
    threads: usize,
    /// Threads waiting for a job.
    idle: usize,
    /// Closed: no new job is accepted, idle threads exit.
    closed: bool,
}

/// A runtime's blocking pool.
pub(crate) struct BlockingPool {
    /// Jobs and threads.
    state: Mutex<State>,
    /// Signalled when a job is queued, or the pool closes.
    work: Condvar,
    /// Signalled when a thread exits.
    exited: Condvar,
    /// The most threads at once.
    max_threads: usize,
    /// How long an idle thread lingers.
    keep_alive: Duration,
}

impl BlockingPool {
    /// A pool with no thread yet.
    pub(crate) fn new(max_threads: usize, keep_alive: Duration) -> Arc<BlockingPool> {
        Arc::new(BlockingPool {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                threads: 0,
                idle: 0,
                closed: false,
            }),
            work: Condvar::new(),
            exited: Condvar::new(),
            max_threads: max_threads.max(1),
            keep_alive,
        })
    }

    /// Queues `job`, starting a thread if none is idle and the cap allows. Returns the job back
    /// if the pool is closed.
    fn submit(self: &Arc<Self>, job: Job) -> Result<(), Job> {
        let mut s = lock(&self.state);
        if s.closed {
            return Err(job);
        }
        s.queue.push_back(job);
        if s.idle > 0 {
            self.work.notify_one();
        } else if s.threads < self.max_threads {
            s.threads += 1;
            drop(s);
            let pool = self.clone();
            let spawned = thread::Builder::new()
                .name("tickless-blocking".into())
                .spawn(move || pool.worker());
            if spawned.is_err() {
                // No thread: the job waits for a running one (there is one unless the cap is
                // reached by threads that failed to start, which we undo here).
                lock(&self.state).threads -= 1;
            }
        }
        Ok(())
    }

    /// A pool thread: takes jobs until idle for the keep-alive, or the pool closes.
    fn worker(self: Arc<Self>) {
        let mut s = lock(&self.state);
        loop {
            if let Some(job) = s.queue.pop_front() {
                drop(s);
                job();
                s = lock(&self.state);
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
            s.idle -= 1;
            if timeout.timed_out() && s.queue.is_empty() {
                break;
            }
        }
        s.threads -= 1;
        drop(s);
        self.exited.notify_all();
    }

    /// Closes the pool: drops the queued jobs (their tasks see a cancelled result), wakes the
    /// idle threads, and waits until `deadline` (or for ever, if `None`) for the running ones.
    /// Returns how many threads were still running a job when it gave up.
    pub(crate) fn close(&self, deadline: Option<Instant>) -> usize {
        let queued = {
            let mut s = lock(&self.state);
            s.closed = true;
            std::mem::take(&mut s.queue)
        };
        self.work.notify_all();
        drop(queued);
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
        s.threads
    }

    /// Threads alive (for tests and stats).
    pub(crate) fn threads(&self) -> usize {
        lock(&self.state).threads
    }
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
pub(crate) struct BlockingTask<F, T> {
    /// The closure, until queued.
    f: Option<F>,
    /// The pool.
    pool: Arc<BlockingPool>,
    /// The job's result, shared with the pool thread.
    state: Arc<JobState<T>>,
}

impl<F, T> BlockingTask<F, T> {
    /// The task that runs `f` on `pool`.
    pub(crate) fn new(pool: Arc<BlockingPool>, f: F) -> Self {
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

impl<F, T> Unpin for BlockingTask<F, T> {}

impl<F, T> Future for BlockingTask<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        if let Some(f) = self.f.take() {
            let done = CompleteOnDrop(self.state.clone());
            let job: Job = Box::new(move || {
                if done.0.cancelled.load(Ordering::Acquire) {
                    return;
                }
                let result = catch_unwind(AssertUnwindSafe(f)).map_err(JoinError::panic);
                done.complete(result);
            });
            if self.pool.submit(job).is_err() {
                panic!("the runtime's blocking pool is shut down: no new blocking work");
            }
        }
        match self.state.slot.poll_take(cx) {
            Poll::Ready(Ok(v)) => Poll::Ready(v),
            // The closure's panic becomes this task's panic, caught by the task's harness.
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
            crate::catch::drop_caught(unclaimed);
        }
    }
}

impl<T> Drop for CompleteOnDrop<T> {
    fn drop(&mut self) {
        self.complete(Err(JoinError::cancelled()));
    }
}

impl<F, T> Drop for BlockingTask<F, T> {
    fn drop(&mut self) {
        // Aborted (or shut down) before the result came: a job not yet started is skipped.
        self.state.cancelled.store(true, Ordering::Release);
        if let Some(unclaimed) = self.state.slot.detach() {
            crate::catch::drop_caught(unclaimed);
        }
    }
}
