//! `JoinHandle`: an owned permission to await a task's output, or abort it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use tickless_timer::internal::Op;

use crate::catch::drop_caught;
use crate::context::with_current;
use crate::park::park_on;
use crate::task::deferred::DeferredStart;
use crate::task::harness::ResultSlot;
use crate::task::id::Id;
use crate::task::join_error::JoinError;
use crate::worker::id::CoreId;
use crate::worker::registry;
use crate::worker::shared::{Due, Shared};

/// An owned permission to await a task's output (or abort it).
///
/// Awaiting gives `Ok(output)`, or `Err(JoinError)` if the task panicked or was cancelled.
/// Dropping the handle detaches the task: it runs on. It is `Send` and `Sync` when the output
/// is `Send`, and may be awaited, joined or dropped on any thread.
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let task = tickless::spawn(async { 6 * 7 });
///     assert_eq!(task.await.unwrap(), 42);
///
///     let stuck = tickless::spawn(std::future::pending::<()>());
///     stuck.abort();
///     assert!(stuck.await.unwrap_err().is_cancelled());
/// });
/// # std::io::Result::Ok(())
/// ```
pub struct JoinHandle<T> {
    /// Where the task leaves its result.
    slot: ResultSlot<T>,
    /// To wake the task on `abort` (its core drops the future).
    waker: Waker,
    /// The task's core (where it was spawned).
    core: CoreId,
    /// Whether the task can leave core 0 while no thread is in `block_on`: a `Send` task that
    /// was queued on a core that ran (`Core::evacuate` moves it when `block_on` returns).
    movable: bool,
    /// A `spawn_at` task's timer, and the core to send its abort to.
    deferred: Option<(Arc<DeferredStart>, Arc<Shared>)>,
}

impl<T> JoinHandle<T> {
    /// The handle of a task on `core`.
    pub(crate) fn new(
        slot: ResultSlot<T>,
        waker: Waker,
        core: CoreId,
        movable: bool,
        deferred: Option<(Arc<DeferredStart>, Arc<Shared>)>,
    ) -> JoinHandle<T> {
        JoinHandle {
            slot,
            waker,
            core,
            movable,
            deferred,
        }
    }

    /// Cancels the task: its future is dropped on its own core at the core's next turn, even
    /// if the task is a [`spawn_at`](crate::Handle::spawn_at) one still waiting for its
    /// deadline (its timer is cancelled), and awaiting the handle gives a cancelled
    /// [`JoinError`]. No effect on a finished task.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// rt.block_on(async {
    ///     let slow = tickless::spawn(tickless::time::sleep(Duration::from_secs(60)));
    ///     slow.abort();
    ///     assert!(slow.await.unwrap_err().is_cancelled());
    ///
    ///     let quick = tickless::spawn(async { 7 });
    ///     while !quick.is_finished() {
    ///         tickless::yield_now().await;
    ///     }
    ///     quick.abort(); // too late: no effect
    ///     assert_eq!(quick.await.unwrap(), 7);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn abort(&self) {
        if self.is_finished() {
            return;
        }
        self.slot.abort();
        if let Some((deferred, shared)) = &self.deferred {
            if deferred.is_waiting() {
                shared.push(Op::Now(Due::Abort(deferred.clone())));
            }
        }
        self.waker.wake_by_ref();
    }

    /// The task's id, unique in the process, as tokio's `JoinHandle::id`: the one
    /// [`task::id`](crate::task::id()) gives inside the task, and the task hooks and the stall
    /// reports name.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let a = tickless::spawn(async {});
    ///     let b = tickless::spawn(async {});
    ///     assert_ne!(a.id(), b.id());
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn id(&self) -> Id {
        self.slot
            .task_id()
            .expect("a task's slot always carries its id")
    }

    /// Whether the task has finished (completed, panicked or been cancelled).
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// rt.block_on(async {
    ///     let stuck = tickless::spawn(std::future::pending::<()>());
    ///     let task = tickless::spawn(async { 6 * 7 });
    ///     while !task.is_finished() {
    ///         tickless::yield_now().await; // let it run
    ///     }
    ///     assert_eq!(task.await.unwrap(), 42); // ready at once
    ///     assert!(!stuck.is_finished());
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn is_finished(&self) -> bool {
        self.slot.is_finished()
    }

    /// Blocks this thread until the task finishes: for threads outside the runtime.
    ///
    /// # Panics
    ///
    /// When called on the thread of the task's own core (the core it was spawned on), from one
    /// of its tasks or its `block_on`: the core would wait for itself forever; `.await` the
    /// handle instead.
    ///
    /// And for a task of core 0 that stays there, from the thread that last ran core 0 (the
    /// last thread in `block_on`; until the first `block_on`, the thread that built the
    /// runtime), outside `block_on`: core 0 runs only inside `block_on`, and that thread is
    /// the one expected to run it. A task stays on core 0 when it is a `spawn_local` one, when
    /// no other core runs (a runtime of one core), or when it was spawned onto core 0 by
    /// `rt.handle(0)` while no thread was in `block_on` (it waits for the next one). A `Send`
    /// task that core 0 ran, or that was queued there during a `block_on`, moves to another
    /// core when that `block_on` returns (see [`Builder::steal_after`](crate::Builder::steal_after)),
    /// so joining it from that thread is fine.
    ///
    /// A task that stays on core 0, joined from any other thread, finishes only while some
    /// thread runs `block_on`: with none running, `join` waits until one does.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let task = rt.handle(1).spawn(async { tickless::core_id() }); // core 1 runs it
    /// let waiter = std::thread::spawn(move || task.join()); // a thread of no core
    /// assert_eq!(waiter.join().unwrap().unwrap(), 1);
    ///
    /// let task = rt.handle(1).spawn(async { 6 * 7 });
    /// assert_eq!(task.join().unwrap(), 42); // from core 0's thread, outside `block_on`
    ///
    /// // Started on core 0, finished on core 1 after `block_on` returned.
    /// let (tx, rx) = std::sync::mpsc::channel::<()>();
    /// let task = rt.block_on(async move {
    ///     tickless::spawn(async move {
    ///         let rx = tickless::task::spawn_blocking(move || rx.recv()); // waits on the pool
    ///         rx.await.unwrap().unwrap();
    ///         tickless::core_id()
    ///     })
    /// });
    /// tx.send(()).unwrap();
    /// assert_eq!(task.join().unwrap(), 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn join(self) -> Result<T, JoinError> {
        let own = with_current(|core| core.id() == self.core).unwrap_or(false)
            || registry::find(self.core).is_some_and(|shared| {
                shared.is_core_thread() && !(self.movable && another_core_runs(self.core))
            });
        if own {
            panic!(
                "`JoinHandle::join` called on the thread of the task's own core, which would \
                 wait for itself forever: `.await` the handle instead (for core 0, inside \
                 `block_on`)"
            );
        }
        park_on(self)
    }
}

/// Whether a core of `core`'s runtime other than `core` runs and takes work.
fn another_core_runs(core: CoreId) -> bool {
    (0..)
        .map(|index| CoreId { index, ..core })
        .map_while(registry::find)
        .any(|shared| shared.id != core && shared.takes_placed_work())
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.slot.poll_take(cx)
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        // A result nobody took is dropped here, under a panic guard: it is user data.
        if let Some(unclaimed) = self.slot.detach() {
            drop_caught(unclaimed);
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id())
            .field("core", &self.core.index)
            .field("finished", &self.is_finished())
            .finish()
    }
}
