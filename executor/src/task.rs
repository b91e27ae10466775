//! Tasks: spawning, join handles, panics and aborts.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use async_task::Runnable;

use tickless_timer::{Op, Slack};

use crate::core::{with_current, Core, Shared, TimerValue, NO_RUNTIME};
use crate::join::JoinSlot;

/// Why a task gave no output.
pub struct JoinError {
    /// Cancelled (aborted or its runtime dropped) or panicked.
    repr: Repr,
}

enum Repr {
    Cancelled,
    /// Behind a mutex only so that `JoinError` is `Sync` (and converts into `io::Error`); it is
    /// locked once, by `into_panic` or to print the message.
    Panic(Mutex<Box<dyn Any + Send + 'static>>),
}

impl JoinError {
    /// The task was aborted, or its runtime shut down before it finished.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// The task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic(_))
    }

    /// The panic's payload, to resume it with `std::panic::resume_unwind`.
    ///
    /// # Panics
    ///
    /// If the task did not panic (see [`is_panic`](Self::is_panic)).
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match self.repr {
            Repr::Panic(p) => p.into_inner().unwrap_or_else(|e| e.into_inner()),
            Repr::Cancelled => panic!("`JoinError::into_panic` on a cancelled task"),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => f.write_str("JoinError::Cancelled"),
            Repr::Panic(p) => write!(f, "JoinError::Panic({:?})", panic_message(p)),
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => f.write_str("task was cancelled"),
            Repr::Panic(p) => write!(f, "task panicked with message {:?}", panic_message(p)),
        }
    }
}

impl std::error::Error for JoinError {}

fn panic_message(p: &Mutex<Box<dyn Any + Send>>) -> String {
    let p = p.lock().unwrap_or_else(|e| e.into_inner());
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string panic payload>".to_string())
}

impl From<JoinError> for std::io::Error {
    fn from(e: JoinError) -> std::io::Error {
        std::io::Error::other(e)
    }
}

pin_project_lite::pin_project! {
    /// A task's future as the executor runs it: panics caught, aborts honoured, the result
    /// handed to the join slot (a cancelled result if it is dropped unfinished), and an entry
    /// in its core's live-task set from its first poll until it is dropped.
    struct TaskFuture<F: Future> {
        #[pin]
        future: F,
        slot: ResultSlot<F::Output>,
        key: Option<usize>,
    }

    impl<F: Future> PinnedDrop for TaskFuture<F> {
        fn drop(this: Pin<&mut Self>) {
            // A no-op if the task finished; otherwise (aborted, or its runtime shut down) its
            // handle learns it was cancelled.
            this.slot.complete(Err(JoinError {
                repr: Repr::Cancelled,
            }));
            if let Some(key) = this.key {
                with_current(|core| {
                    if let Ok(mut active) = core.active.try_borrow_mut() {
                        active.try_remove(key);
                    }
                });
            }
        }
    }
}

impl<F: Future> Future for TaskFuture<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        if this.key.is_none() {
            // First poll, on the task's core: register so that shutdown can reach it.
            *this.key = with_current(|core| core.active.borrow_mut().insert(cx.waker().clone()));
        }
        if this.slot.is_aborted() {
            // Returning drops the future, here on its core; the drop reports the cancel.
            return Poll::Ready(());
        }
        let result = match catch_unwind(AssertUnwindSafe(|| this.future.poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(out)) => Ok(out),
            Err(payload) => Err(JoinError {
                repr: Repr::Panic(Mutex::new(payload)),
            }),
        };
        this.slot.complete(result);
        Poll::Ready(())
    }
}

/// An owned permission to await a task's output (or abort it).
///
/// Awaiting gives `Ok(output)`, or `Err(JoinError)` if the task panicked or was cancelled.
/// Dropping the handle detaches the task: it runs on. It is `Send` and `Sync` when the output
/// is `Send`, and may be awaited, joined or dropped on any thread.
pub struct JoinHandle<T> {
    /// Where the task leaves its result.
    slot: ResultSlot<T>,
    /// To wake the task on `abort` (its core drops the future).
    waker: std::task::Waker,
}

impl<T> JoinHandle<T> {
    /// Cancels the task: its future is dropped, on its own core, at its next turn, and awaiting
    /// the handle gives a cancelled [`JoinError`]. No effect on a finished task.
    pub fn abort(&self) {
        if self.is_finished() {
            return;
        }
        self.slot.abort();
        self.waker.wake_by_ref();
    }

    /// Whether the task has finished (completed, panicked or been cancelled).
    pub fn is_finished(&self) -> bool {
        self.slot.is_finished()
    }

    /// Blocks this thread until the task finishes. Do not call it from a task on the task's own
    /// core: the core would wait for itself.
    pub fn join(self) -> Result<T, JoinError> {
        crate::runtime::park_on(self)
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.slot.poll_take(cx)
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// The schedule function of a task owned by `shared`'s core: the local queue when woken on
/// that core's thread, the inbox otherwise.
fn schedule(shared: Arc<Shared>) -> impl Fn(Runnable) + Send + Sync + 'static {
    move |runnable| {
        let mut runnable = Some(runnable);
        with_current(|core| {
            if Arc::ptr_eq(&core.shared, &shared) {
                core.schedule_local(runnable.take().expect("taken once"));
            }
        });
        if let Some(runnable) = runnable {
            shared.schedule_remote(runnable);
        }
    }
}

/// Where a task leaves its result for its handle.
type ResultSlot<T> = Arc<JoinSlot<Result<T, JoinError>>>;

/// Wraps a future for spawning.
fn wrap<F: Future>(future: F) -> (TaskFuture<F>, ResultSlot<F::Output>) {
    let slot = Arc::new(JoinSlot::new());
    let wrapped = TaskFuture {
        future,
        slot: slot.clone(),
        key: None,
    };
    (wrapped, slot)
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
    let (wrapped, slot) = wrap(future);
    let (runnable, task) = async_task::spawn_local(wrapped, schedule(core.shared.clone()));
    task.detach();
    let waker = runnable.waker();
    core.schedule_local(runnable);
    JoinHandle { slot, waker }
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
    let (wrapped, slot) = wrap(future);
    let (runnable, task) = async_task::spawn(wrapped, schedule(shared.clone()));
    task.detach();
    let waker = runnable.waker();
    match deadline {
        None => runnable.schedule(),
        Some(deadline) => shared.push(Op::Insert {
            deadline,
            slack: Slack::None,
            value: TimerValue::Run(runnable),
        }),
    }
    JoinHandle { slot, waker }
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
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    with_current(|core| spawn_on(core, future)).expect(NO_RUNTIME)
}

/// Yields once to the other tasks of this core.
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(tickless::yield_now());
/// # std::io::Result::Ok(())
/// ```
pub async fn yield_now() {
    struct YieldNow(bool);
    impl Future for YieldNow {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                return Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
    YieldNow(false).await
}
