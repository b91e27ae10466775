//! Task ids, as tokio's `tokio::task::Id`: unique in the process, from one global counter; and
//! what a task's wrapper keeps of itself (its id, where it was spawned).

use std::cell::Cell;
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

/// A task's id, where it was spawned and its name: kept in the task's wrapper, published by
/// its core while it is polled.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Meta {
    /// The task's id.
    pub(crate) id: Id,
    /// The call to `spawn` (or `spawn_local`, `Handle::spawn`, ...) that made it.
    pub(crate) at: &'static Location<'static>,
    /// Its name, if it was spawned with one (`task::Builder::name`), interned: one word, that
    /// the core publishes with one store.
    pub(crate) name: Option<&'static &'static str>,
}

impl Meta {
    /// A new task's: a fresh id, spawned at `at`, named by the `task::Builder` whose spawn
    /// this is, if any (see `task::name`). The name is taken, so that a task the spawn makes
    /// in turn (a spawn hook that spawns) is not named too.
    pub(crate) fn new(at: &'static Location<'static>) -> Meta {
        Meta {
            id: Id::next(),
            at,
            name: NEXT_NAME.with(Cell::take),
        }
    }
}

thread_local! {
    /// The name for the task being spawned on this thread now, set by a `task::Builder` for
    /// the one spawn it makes (so that no spawn function has to carry it); `None` otherwise.
    static NEXT_NAME: Cell<Option<&'static &'static str>> = const { Cell::new(None) };
}

/// Names (or, `None`, does not name) the next task spawned on this thread: `task::Builder`'s,
/// around its spawn.
pub(crate) fn name_next(name: Option<&'static &'static str>) {
    NEXT_NAME.with(|n| n.set(name));
}
