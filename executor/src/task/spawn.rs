//! Spawning: on the current core (`spawn`, `spawn_local`) and onto a core from any thread
//! (`Handle::spawn`, `Handle::spawn_at`).

use std::future::Future;
use std::sync::Arc;

use async_task::Runnable;
use tickless_timer::{Op, Slack};

use crate::context::{with_current, NO_RUNTIME};
use crate::task::deferred::DeferredStart;
use crate::task::harness::TaskFuture;
use crate::task::join_handle::JoinHandle;
use crate::worker::shared::Shared;
use crate::worker::timers::TimerValue;
use crate::worker::Core;

/// The schedule function of a task owned by `shared`'s core: the local queue when woken on
/// that core's thread, the inbox otherwise.
fn schedule(shared: Arc<Shared>) -> impl Fn(Runnable) + Send + Sync + 'static {
    move |runnable| {
        let mut runnable = Some(runnable);
        with_current(|core| {
            if Arc::ptr_eq(core.shared(), &shared) {
                core.schedule_local(runnable.take().expect("taken once"));
            }
        });
        if let Some(runnable) = runnable {
            shared.schedule_remote(runnable);
        }
    }
}

/// Spawns a future on `core`, from its own thread, and queues it there.
///
/// Spawned as a local task: tasks never leave their core, and async-task then checks that the
/// future is only polled and dropped on it.
pub(crate) fn spawn_on<F, T>(core: &Core, future: F) -> JoinHandle<T>
where
    F: Future<Output = T> + 'static,
    T: 'static,
{
    let (wrapped, slot) = TaskFuture::new(future);
    let (runnable, task) = async_task::spawn_local(wrapped, schedule(core.shared().clone()));
    task.detach();
    let waker = runnable.waker();
    core.schedule_local(runnable);
    JoinHandle::new(slot, waker, core.id(), None)
}

/// Spawns a `Send` future onto the core of `shared`, from any thread: it runs there at once,
/// or from `deadline` (ns on the runtime's clock) on, through the core's timer hand-over.
pub(crate) fn spawn_remote<F, T>(
    shared: &Arc<Shared>,
    future: F,
    deadline: Option<u64>,
) -> JoinHandle<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (wrapped, slot) = TaskFuture::new(future);
    let (runnable, task) = async_task::spawn(wrapped, schedule(shared.clone()));
    task.detach();
    let waker = runnable.waker();
    let deferred = match deadline {
        None => {
            runnable.schedule();
            None
        }
        Some(deadline) => {
            let deferred = Arc::new(DeferredStart::new());
            shared.push(Op::Insert {
                deadline,
                slack: Slack::None,
                value: TimerValue::RunAt(runnable, deferred.clone()),
            });
            Some((deferred, shared.clone()))
        }
    };
    JoinHandle::new(slot, waker, shared.id, deferred)
}

/// Spawns a `!Send` future on the current core.
///
/// The task runs on this core only; its output is reached through the [`JoinHandle`].
///
/// # Panics
///
/// Outside a tickless runtime.
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
///
/// let rt = tickless::Runtime::new()?;
/// let out = rt.block_on(async {
///     let local = Rc::new(21); // not `Send`
///     tickless::spawn_local(async move { *local * 2 }).await
/// });
/// assert_eq!(out.unwrap(), 42);
/// # std::io::Result::Ok(())
/// ```
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    with_current(|core| spawn_on(core, future)).expect(NO_RUNTIME)
}

/// Spawns a future on the current core, as `tokio::spawn` does; the future must be `Send`.
///
/// Tasks never migrate between cores: this is [`spawn_local`] with tokio's bounds, so that code
/// written for tokio compiles unchanged.
///
/// # Panics
///
/// Outside a tickless runtime.
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// let out = rt.block_on(async {
///     let task = tickless::spawn(async { "hello" });
///     task.await
/// });
/// assert_eq!(out.unwrap(), "hello");
/// # std::io::Result::Ok(())
/// ```
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    with_current(|core| spawn_on(core, future)).expect(NO_RUNTIME)
}
