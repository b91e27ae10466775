//! `JoinSet`: a group of tasks, awaited in the order they finish, aborted together when the
//! set is dropped.

use std::collections::VecDeque;
use std::fmt;
use std::future::{poll_fn, Future};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use slab::Slab;

use crate::runtime::Handle;
use crate::sync::{lock, Mutex};
use crate::task::{spawn, spawn_local, JoinError, JoinHandle};

/// A set of tasks: spawn into it, await them in the order they finish, and abort them all by
/// dropping the set. tokio's `JoinSet`, with the same names.
///
/// Only the tasks that finished since the last look are polled (each task's handle has a waker
/// of its own that marks it ready), so awaiting the next of many tasks costs no scan.
///
/// # Examples
///
/// ```
/// use tickless::task::JoinSet;
///
/// let rt = tickless::Runtime::new()?;
/// let total = rt.block_on(async {
///     let mut set = JoinSet::new();
///     for i in 1..=10u32 {
///         set.spawn(async move { i * i });
///     }
///     let mut total = 0;
///     while let Some(done) = set.join_next().await {
///         total += done.unwrap();
///     }
///     total
/// });
/// assert_eq!(total, 385);
/// # std::io::Result::Ok(())
/// ```
pub struct JoinSet<T> {
    /// The tasks' handles, with the waker each is polled with.
    tasks: Slab<(JoinHandle<T>, Waker)>,
    /// Which tasks to poll next, and who awaits the set.
    ready: Arc<ReadyList>,
}

/// The keys of the tasks that may have finished, and the waker of the set's awaiter.
#[derive(Default)]
struct ReadyList {
    /// Keys to poll, and the awaiter's waker.
    state: Mutex<(VecDeque<usize>, Option<Waker>)>,
}

impl ReadyList {
    /// Marks `key` ready and wakes the awaiter.
    fn push(&self, key: usize) {
        let waker = {
            let mut s = lock(&self.state);
            s.0.push_back(key);
            s.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The waker a task's handle is polled with: it marks the task ready in the set.
struct TaskWaker {
    /// The task's key in the set.
    key: usize,
    /// The set's ready list.
    ready: Arc<ReadyList>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.ready.push(self.key);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.ready.push(self.key);
    }
}

impl<T> Default for JoinSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> JoinSet<T> {
    /// An empty set.
    ///
    /// See the example on [`JoinSet`].
    pub fn new() -> JoinSet<T> {
        JoinSet {
            tasks: Slab::new(),
            ready: Arc::new(ReadyList::default()),
        }
    }

    /// The number of tasks in the set (finished ones not yet joined included).
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless::task::JoinSet;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let mut set = JoinSet::new();
    ///     set.spawn(async { 1 });
    ///     set.spawn(async { 2 });
    ///     assert_eq!(set.len(), 2); // finished or not, until joined
    ///     set.join_next().await;
    ///     assert_eq!(set.len(), 1);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the set holds no task.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless::task::JoinSet;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let mut set = JoinSet::new();
    ///     assert!(set.is_empty());
    ///     set.spawn(async { 1 });
    ///     assert!(!set.is_empty());
    ///     assert_eq!(set.join_next().await.unwrap().unwrap(), 1);
    ///     assert!(set.is_empty());
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Adds a task's handle to the set; it is polled once at the next join.
    fn insert(&mut self, handle: JoinHandle<T>) {
        let entry = self.tasks.vacant_entry();
        let key = entry.key();
        let waker = Waker::from(Arc::new(TaskWaker {
            key,
            ready: self.ready.clone(),
        }));
        entry.insert((handle, waker));
        self.ready.push(key);
    }

    /// Spawns a `!Send` future on the current core into the set, as
    /// [`spawn_local`](crate::task::spawn_local).
    ///
    /// # Panics
    ///
    /// Outside a tickless runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::rc::Rc;
    /// use tickless::task::JoinSet;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let mut set = JoinSet::new();
    ///     let base = Rc::new(10); // not `Send`: the tasks stay on this core
    ///     for i in 0..3 {
    ///         let base = base.clone();
    ///         set.spawn_local(async move { *base + i });
    ///     }
    ///     let mut outputs = set.join_all().await;
    ///     outputs.sort();
    ///     assert_eq!(outputs, [10, 11, 12]);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    #[track_caller]
    pub fn spawn_local<F>(&mut self, future: F)
    where
        F: Future<Output = T> + 'static,
        T: 'static,
    {
        self.insert(spawn_local(future));
    }

    /// Waits for the next task to finish and returns its result; `None` when the set is empty.
    /// Cancel-safe: a result is never lost by dropping the future this returns.
    ///
    /// See the example on [`JoinSet`].
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        poll_fn(|cx| self.poll_join_next(cx)).await
    }

    /// The result of a task that has finished, if one has; never waits.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless::task::JoinSet;
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// rt.block_on(async {
    ///     let mut set = JoinSet::new();
    ///     assert!(set.try_join_next().is_none()); // empty
    ///     set.spawn(async { 1 });
    ///     set.spawn(std::future::pending());
    ///     let done = loop {
    ///         if let Some(done) = set.try_join_next() {
    ///             break done;
    ///         }
    ///         tickless::yield_now().await; // let the tasks run
    ///     };
    ///     assert_eq!(done.unwrap(), 1);
    ///     assert!(set.try_join_next().is_none()); // the other one never finishes
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        let waker = Waker::noop();
        match self.poll_join_next(&mut Context::from_waker(waker)) {
            Poll::Ready(r) => r,
            Poll::Pending => None,
        }
    }

    /// Polls for the next finished task: `Ready(None)` when the set is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use tickless::task::JoinSet;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let mut set = JoinSet::new();
    ///     set.spawn(async { 7 });
    ///     let done = poll_fn(|cx| set.poll_join_next(cx)).await; // what `join_next` does
    ///     assert_eq!(done.unwrap().unwrap(), 7);
    ///     assert!(poll_fn(|cx| set.poll_join_next(cx)).await.is_none()); // empty: `Ready(None)`
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        loop {
            let next = {
                let mut s = lock(&self.ready.state);
                let next = s.0.pop_front();
                if next.is_none() {
                    s.1 = Some(cx.waker().clone());
                }
                next
            };
            let Some(key) = next else {
                return if self.tasks.is_empty() {
                    Poll::Ready(None)
                } else {
                    Poll::Pending
                };
            };
            // A key may be stale (its task joined already, the key reused): a poll too many.
            let Some((handle, waker)) = self.tasks.get_mut(key) else {
                continue;
            };
            let mut task_cx = Context::from_waker(waker);
            if let Poll::Ready(result) = std::pin::Pin::new(handle).poll(&mut task_cx) {
                self.tasks.remove(key);
                return Poll::Ready(Some(result));
            }
        }
    }

    /// Waits for every task and returns their outputs, in the order they finished.
    ///
    /// # Panics
    ///
    /// If a task panicked (the panic is resumed here) or was cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless::task::JoinSet;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let mut set = JoinSet::new();
    ///     for i in 1..=3 {
    ///         set.spawn(async move { i * 10 });
    ///     }
    ///     let mut outputs = set.join_all().await; // in the order the tasks finished
    ///     outputs.sort();
    ///     assert_eq!(outputs, [10, 20, 30]);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn join_all(mut self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.len());
        while let Some(result) = self.join_next().await {
            match result {
                Ok(v) => out.push(v),
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => panic!("a task of the JoinSet was cancelled: {e}"),
            }
        }
        out
    }

    /// Aborts every task in the set (they stay in it until joined, with a cancelled result).
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless::task::JoinSet;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let mut set = JoinSet::new();
    ///     for _ in 0..3 {
    ///         set.spawn(std::future::pending::<()>());
    ///     }
    ///     set.abort_all();
    ///     assert_eq!(set.len(), 3); // still there, until joined
    ///     while let Some(result) = set.join_next().await {
    ///         assert!(result.unwrap_err().is_cancelled());
    ///     }
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn abort_all(&mut self) {
        for (_, (handle, _)) in &self.tasks {
            handle.abort();
        }
    }

    /// Aborts every task and waits until each has finished. The results of tasks that had
    /// already finished are dropped too, as tokio's: take them first with
    /// [`try_join_next`](Self::try_join_next) if they matter.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless::task::JoinSet;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let mut set = JoinSet::new();
    ///     set.spawn(std::future::pending::<()>());
    ///     set.spawn(async {});
    ///     set.shutdown().await; // their results are dropped
    ///     assert!(set.is_empty());
    ///     set.spawn(async {}); // the set can be used again
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }

    /// Empties the set without aborting its tasks: they run on, detached.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use tickless::task::JoinSet;
    /// use tickless::time::sleep;
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let ran = Arc::new(AtomicBool::new(false));
    ///     let mut set = JoinSet::new();
    ///     let flag = ran.clone();
    ///     set.spawn(async move {
    ///         sleep(Duration::from_secs(1)).await;
    ///         flag.store(true, Ordering::SeqCst);
    ///     });
    ///     set.detach_all();
    ///     assert!(set.is_empty());
    ///     drop(set); // aborts nothing: the task is no longer in it
    ///     sleep(Duration::from_secs(2)).await;
    ///     assert!(ran.load(Ordering::SeqCst));
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn detach_all(&mut self) {
        self.tasks.clear();
        lock(&self.ready.state).0.clear();
    }
}

impl<T: Send + 'static> JoinSet<T> {
    /// Spawns a `Send` future on the current core into the set, as [`spawn`](crate::spawn).
    ///
    /// # Panics
    ///
    /// Outside a tickless runtime.
    ///
    /// See the example on [`JoinSet`].
    #[track_caller]
    pub fn spawn<F>(&mut self, future: F)
    where
        F: Future<Output = T> + Send + 'static,
    {
        self.insert(spawn(future));
    }

    /// Spawns a `Send` future onto the core of `handle` into the set, from any thread.
    ///
    /// # Examples
    ///
    /// One task on each core:
    ///
    /// ```
    /// use tickless::task::JoinSet;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let handles: Vec<_> = (0..rt.cores()).map(|core| rt.handle(core)).collect();
    /// rt.block_on(async {
    ///     let mut set = JoinSet::new();
    ///     for handle in &handles {
    ///         set.spawn_on(async { tickless::core_id() }, handle);
    ///     }
    ///     let mut cores = set.join_all().await;
    ///     cores.sort();
    ///     assert_eq!(cores, [0, 1]);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    #[track_caller]
    pub fn spawn_on<F>(&mut self, future: F, handle: &Handle)
    where
        F: Future<Output = T> + Send + 'static,
    {
        self.insert(handle.spawn(future));
    }
}

/// Collects futures into a set, spawning each on the current core as
/// [`JoinSet::spawn`] does (tokio's `JoinSet` collects the same way).
///
/// # Panics
///
/// Outside a tickless runtime.
///
/// # Examples
///
/// ```
/// use tickless::task::JoinSet;
///
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let mut set: JoinSet<u32> = (1..=3).map(|i| async move { i * 10 }).collect();
///     let mut sum = 0;
///     while let Some(out) = set.join_next().await {
///         sum += out.expect("a task");
///     }
///     assert_eq!(sum, 60);
/// });
/// # std::io::Result::Ok(())
/// ```
impl<T, F> FromIterator<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    fn from_iter<I: IntoIterator<Item = F>>(iter: I) -> JoinSet<T> {
        let mut set = JoinSet::new();
        for future in iter {
            set.spawn(future);
        }
        set
    }
}

impl<T> Drop for JoinSet<T> {
    /// Aborts every task still in the set.
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet").field("len", &self.len()).finish()
    }
}
