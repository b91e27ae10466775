//! `Handle`: reaching one core of a runtime from any thread.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crate::blocking::{BlockingPool, BlockingTask};
use crate::context::{lent, with_current, Lent, NO_RUNTIME};
use crate::runtime::RuntimeMetrics;
use crate::task::{spawn_remote, JoinHandle};
use crate::worker::shared::{Peers, Shared};

/// A handle to one core of a runtime: `Send`, `Sync` and `Clone`, usable from any thread.
///
/// # Examples
///
/// ```
/// let rt = tickless::Builder::new().cores(2).build()?;
/// let on_core_1 = rt.handle(1).spawn(async { tickless::core_id() });
/// assert_eq!(on_core_1.join().unwrap(), 1);
/// # std::io::Result::Ok(())
/// ```
#[derive(Clone)]
pub struct Handle {
    /// The core's shared half.
    shared: Arc<Shared>,
    /// Every core of the runtime (what its tasks' metadata holds).
    peers: Arc<Peers>,
    /// The runtime's blocking pool.
    blocking: Arc<BlockingPool>,
}

impl Handle {
    /// The handle of the core whose shared half is `shared`.
    pub(crate) fn new(
        shared: Arc<Shared>,
        peers: Arc<Peers>,
        blocking: Arc<BlockingPool>,
    ) -> Handle {
        Handle {
            shared,
            peers,
            blocking,
        }
    }

    /// The metrics of the runtime this core belongs to (all its cores), as tokio's
    /// `Handle::metrics`. See [`RuntimeMetrics`].
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let workers = rt.block_on(async {
    ///     tickless::Handle::current().metrics().num_workers()
    /// });
    /// assert_eq!(workers, 2);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn metrics(&self) -> RuntimeMetrics {
        RuntimeMetrics::new(self.peers.clone(), self.blocking.clone())
    }

    /// The handle of the core running the caller, as tokio's `Handle::current`.
    ///
    /// # Panics
    ///
    /// Outside a tickless runtime.
    ///
    /// # Examples
    ///
    /// A task of core 1 takes its core's handle and hands it out, to spawn onto core 1 later:
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let task = rt.handle(1).spawn(async { tickless::Handle::current() });
    /// let core_1 = task.join().unwrap(); // `Send`: fine on this thread
    /// assert_eq!(core_1.core(), 1);
    /// assert_eq!(core_1.spawn(async { tickless::core_id() }).join().unwrap(), 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn current() -> Handle {
        match Handle::try_current() {
            Ok(handle) => handle,
            Err(e) if e.is_thread_local_destroyed() => panic!("{e}"),
            Err(_) => panic!("{NO_RUNTIME}"),
        }
    }

    /// The handle of the core running the caller, or an error outside a runtime, as tokio's
    /// `Handle::try_current`: for code that asks whether it runs inside a runtime (a `Drop`
    /// that spawns its clean-up where it can, a library choosing a runtime).
    ///
    /// Inside a [`spawn_blocking`](crate::task::spawn_blocking) closure it is the handle of the
    /// core that spawned the job (no core runs on the pool's thread).
    ///
    /// # Errors
    ///
    /// [`TryCurrentError`]: [`is_missing_context`](TryCurrentError::is_missing_context) on a
    /// thread that runs no core of a runtime (nor a blocking job of one),
    /// [`is_thread_local_destroyed`](TryCurrentError::is_thread_local_destroyed) while the
    /// thread exits.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless::runtime::Handle;
    ///
    /// let err = Handle::try_current().unwrap_err(); // no runtime on this thread
    /// assert!(err.is_missing_context());
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let core = rt.block_on(async { Handle::try_current().map(|h| h.core()) });
    /// assert_eq!(core.unwrap(), 0);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn try_current() -> Result<Handle, TryCurrentError> {
        let on_core = with_current(|core| {
            Handle::new(
                core.shared().clone(),
                core.peers().clone(),
                core.blocking().clone(),
            )
        });
        if let Some(handle) = on_core {
            return Ok(handle);
        }
        match lent() {
            Ok(Some((shared, peers, blocking))) => Ok(Handle::new(shared, peers, blocking)),
            Ok(None) => Err(TryCurrentError(Missing::Context)),
            Err(()) => Err(TryCurrentError(Missing::ThreadLocal)),
        }
    }

    /// Runs `f` on the runtime's blocking pool; its result wakes a task on this core, which
    /// the returned handle resolves from. See [`spawn_blocking`](crate::task::spawn_blocking).
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// // Runs on a thread of the blocking pool, not on core 1 itself.
    /// let sum = rt.handle(1).spawn_blocking(|| (1..=10u32).sum::<u32>());
    /// assert_eq!(sum.join().unwrap(), 55);
    /// # std::io::Result::Ok(())
    /// ```
    #[track_caller]
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let pool = self.blocking.clone();
        let task = async move {
            // On the core that runs the task: the closure runs in its context (see
            // `task::spawn_blocking`).
            let lent = with_current(Lent::of);
            BlockingTask::new(pool, move || match lent {
                Some(lent) => lent.run(f),
                None => f(),
            })
            .await
        };
        spawn_remote(&self.peers, &self.shared, task, None, true)
    }
}

impl Handle {
    /// The core's shared half.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Every core of its runtime.
    pub(crate) fn peers(&self) -> &Arc<Peers> {
        &self.peers
    }

    /// A handle to every core of the runtime running the caller, by index: what
    /// [`Runtime::handle`](crate::Runtime::handle) gives for each core, from inside a task
    /// that has no `Runtime` at hand (to start work on every core, as a server that listens on
    /// each does). `None` outside a runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let cores = rt.block_on(async {
    ///     let all = tickless::Handle::all_current().expect("inside the runtime");
    ///     let mut cores = Vec::new();
    ///     for handle in &all {
    ///         cores.push(handle.spawn(async { tickless::core_id() }).await.unwrap());
    ///     }
    ///     cores
    /// });
    /// assert_eq!(cores, [0, 1]);
    /// assert!(tickless::Handle::all_current().is_none()); // outside it
    /// # std::io::Result::Ok(())
    /// ```
    pub fn all_current() -> Option<Vec<Handle>> {
        with_current(|core| {
            let blocking = core.blocking();
            core.peers().all().map(|cores| {
                cores
                    .iter()
                    .map(|shared| {
                        Handle::new(shared.clone(), core.peers().clone(), blocking.clone())
                    })
                    .collect()
            })
        })
        .flatten()
    }

    /// The core's index.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// assert_eq!(rt.handle(1).core(), 1);
    /// assert_eq!(rt.block_on(async { tickless::Handle::current().core() }), 0);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn core(&self) -> usize {
        self.shared.id.index
    }

    /// Spawns a `Send` future onto the core. From another thread it goes through the core's
    /// inbox, which wakes the core only if it sleeps (once for a burst).
    ///
    /// # Examples
    ///
    /// From a thread outside the runtime:
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let core_1 = rt.handle(1);
    /// let thread = std::thread::spawn(move || {
    ///     let task = core_1.spawn(async { tickless::core_id() });
    ///     task.join().unwrap() // a thread outside the runtime may block on the handle
    /// });
    /// assert_eq!(thread.join().unwrap(), 1);
    /// # std::io::Result::Ok(())
    /// ```
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_remote(&self.peers, &self.shared, future, None, true)
    }

    /// Spawns onto the core a future that need not be `Send`: `create` (which must be `Send`)
    /// runs on the core and makes the future there, so it may hold the core's I/O types, `Rc`s
    /// and the like. As tokio-util's `LocalPoolHandle::spawn_pinned`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let task = rt.handle(1).spawn_pinned(|| async {
    ///     let local = Rc::new(tickless::core_id()); // not `Send`, lives on core 1
    ///     *local
    /// });
    /// assert_eq!(task.join().unwrap(), 1);
    /// # std::io::Result::Ok(())
    /// ```
    #[track_caller]
    pub fn spawn_pinned<C, F>(&self, create: C) -> JoinHandle<F::Output>
    where
        C: FnOnce() -> F + Send + 'static,
        F: Future + 'static,
        F::Output: Send + 'static,
    {
        /// Aborts the inner task if the outer one is dropped first (aborted, or shut down).
        struct AbortOnDrop<T>(Option<JoinHandle<T>>);
        impl<T> Drop for AbortOnDrop<T> {
            fn drop(&mut self) {
                if let Some(inner) = &self.0 {
                    inner.abort();
                }
            }
        }
        spawn_remote(
            &self.peers,
            &self.shared,
            async move {
                let mut inner = AbortOnDrop(Some(crate::task::spawn_local(create())));
                let out = inner.0.as_mut().expect("set above").await;
                inner.0 = None;
                match out {
                    Ok(v) => v,
                    // Re-raise the inner task's panic as the outer task's own.
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(_) => std::future::pending().await,
                }
            },
            None,
            // It stays: the inner task is on the core of the outer one's first poll.
            false,
        )
    }

    /// Whether the core has published that it sleeps (for monitoring and tests).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let core_1 = rt.handle(1);
    /// // Core 1 has nothing to run: it soon sleeps, and says so.
    /// while !core_1.is_parked() {
    ///     std::thread::sleep(Duration::from_millis(1));
    /// }
    /// // A spawn wakes it.
    /// assert_eq!(core_1.spawn(async { 7 }).join().unwrap(), 7);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn is_parked(&self) -> bool {
        self.shared.is_parked()
    }

    /// Spawns a `Send` future that becomes runnable on the core at `deadline`. This is a timer
    /// handed to the core: it wakes the core only if the core sleeps past `deadline`. Aborting
    /// its handle before then cancels the timer and drops the future at the core's next turn.
    ///
    /// # Examples
    ///
    /// On paused time, so that no real time passes:
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::Instant;
    ///
    /// let rt = tickless::Builder::new().cores(1).start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let core = tickless::Handle::current();
    ///     let deadline = Instant::now() + Duration::from_secs(30);
    ///     let late = core.spawn_at(deadline, async { Instant::now() });
    ///     assert!(late.await.unwrap() >= deadline); // it did not start before
    ///     let never = core.spawn_at(deadline + Duration::from_secs(30), async {});
    ///     never.abort(); // cancels its timer
    ///     assert!(never.await.unwrap_err().is_cancelled());
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    #[track_caller]
    pub fn spawn_at<F>(&self, deadline: crate::time::Instant, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_remote(&self.peers, &self.shared, future, Some(deadline.ns()), true)
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("core", &self.core())
            .finish()
    }
}

/// The error of [`Handle::try_current`] outside a runtime, as tokio's `TryCurrentError`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TryCurrentError(Missing);

/// What [`Handle::try_current`] found missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Missing {
    /// No runtime runs on this thread.
    Context,
    /// The thread-local that says which was destroyed (the thread exits).
    ThreadLocal,
}

impl TryCurrentError {
    /// Whether the call was made outside a runtime (on a thread that runs no core of one,
    /// nor a blocking job of one).
    pub fn is_missing_context(&self) -> bool {
        self.0 == Missing::Context
    }

    /// Whether the call was made while the thread exits, once the runtime's thread-local is
    /// gone (from another thread-local's destructor).
    pub fn is_thread_local_destroyed(&self) -> bool {
        self.0 == Missing::ThreadLocal
    }
}

impl fmt::Debug for TryCurrentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TryCurrentError").field(&self.0).finish()
    }
}

impl fmt::Display for TryCurrentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Missing::Context => f.write_str(
                "there is no tickless runtime running, must be called from the context of a \
                 tickless runtime (a task, `block_on`, or a `spawn_blocking` closure)",
            ),
            Missing::ThreadLocal => f.write_str(
                "the tickless context thread-local variable has been destroyed (the thread is \
                 exiting)",
            ),
        }
    }
}

impl std::error::Error for TryCurrentError {}
