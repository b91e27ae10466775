//! Task ids, as tokio's `tokio::task::Id`: unique in the process, from one global counter; and
//! what a task's wrapper keeps of itself (its id, where it was spawned).

use std::fmt;
use std::num::NonZeroU64;
use std::panic::Location;

// `std`'s atomic, not `crate::sync`'s: a process-wide counter that orders nothing (and a
// static, which loom's atomics cannot be).
use std::sync::atomic::{AtomicU64, Ordering};

/// An opaque id of a task, unique among all the tasks of the process (of every runtime) for
/// the process's life, as tokio's `tokio::task::Id`.
///
/// Ids come from one global counter: a task spawned later has a larger one, and none is ever
/// reused. Read a task's with [`JoinHandle::id`](crate::task::JoinHandle::id), from inside it
/// with [`task::id`](crate::task::id()), and in the task hooks with
/// [`TaskMeta::id`](crate::runtime::TaskMeta::id).
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let task = tickless::spawn(async { tickless::task::id() });
///     let id = task.id();
///     assert_eq!(task.await.unwrap(), id); // the same id, seen from inside
///     println!("task {id}"); // printed as a plain number
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(NonZeroU64);

/// The last id given out (0: none yet).
static NEXT: AtomicU64 = AtomicU64::new(0);

impl Id {
    /// A new id, never given out before. (A relaxed add: ids need to be unique, not ordered
    /// with anything else.)
    pub(crate) fn next() -> Id {
        let n = NEXT.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        // 2^64 spawns would take centuries at a billion a second.
        Id(NonZeroU64::new(n).expect("task ids exhausted"))
    }

    /// The id as a number (the core publishes it in one word).
    pub(crate) fn as_u64(self) -> u64 {
        self.0.get()
    }

    /// The id a number published by [`as_u64`](Self::as_u64) names; `None` for 0.
    pub(crate) fn from_u64(n: u64) -> Option<Id> {
        NonZeroU64::new(n).map(Id)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Id({})", self.0)
    }
}

/// A task's id and where it was spawned: kept in the task's wrapper, published by its core
/// while it is polled.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Meta {
    /// The task's id.
    pub(crate) id: Id,
    /// The call to `spawn` (or `spawn_local`, `Handle::spawn`, ...) that made it.
    pub(crate) at: &'static Location<'static>,
}

impl Meta {
    /// A new task's: a fresh id, spawned at `at`.
    pub(crate) fn new(at: &'static Location<'static>) -> Meta {
        Meta { id: Id::next(), at }
    }
}
