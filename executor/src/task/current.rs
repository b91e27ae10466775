//! The task being polled on this thread: `task::id` and `task::try_id`, read from the core that
//! polls it (which publishes it for the stall detector too, `worker::watch`).

use crate::context::with_current;
use crate::task::id::Id;

/// The id of the task being polled on this thread, as tokio's `tokio::task::id`.
///
/// # Panics
///
/// Outside a task: in a `block_on` future itself, on a thread of no runtime, in a blocking
/// pool job. [`try_id`] returns `None` there instead.
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let a = tickless::spawn(async { tickless::task::id() });
///     let b = tickless::spawn(async { tickless::task::id() });
///     assert_ne!(a.await.unwrap(), b.await.unwrap());
/// });
/// # std::io::Result::Ok(())
/// ```
#[track_caller]
pub fn id() -> Id {
    try_id().expect("`tickless::task::id` called outside a task")
}

/// The id of the task being polled on this thread, or `None` outside a task (in a `block_on`
/// future itself, on a thread of no runtime), as tokio's `tokio::task::try_id`.
///
/// # Examples
///
/// ```
/// assert!(tickless::task::try_id().is_none()); // no runtime
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     assert!(tickless::task::try_id().is_none()); // the block_on future is no task
///     let inside = tickless::spawn(async { tickless::task::try_id() });
///     assert!(inside.await.unwrap().is_some());
/// });
/// # std::io::Result::Ok(())
/// ```
pub fn try_id() -> Option<Id> {
    with_current(|core| core.shared().watch.task_id()).flatten()
}
