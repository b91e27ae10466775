//! What the runtime's observers see of a core, in its shared half: the poll in progress (which
//! task, spawned where: `task::id`, and the stall detector's watchdog on another thread), and
//! the task hooks the runtime was built with.
//!
//! # Cost
//!
//! A poll costs the core two relaxed stores of its own (the poll's number at its start, 0 at
//! its end) and a task's poll two more (its id and spawn location; the id cleared at the end),
//! all to a line no other thread writes: no read-modify-write, no fence, no clock read. The
//! watchdog reads the words once per check (see `runtime::watchdog`).
//!
//! These atomics are `std`'s, not `crate::sync`'s: only the watchdog and a signal handler read
//! them, and neither is part of a protocol the loom models check.

use std::panic::Location;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

use crate::task::hooks::Hooks;
use crate::task::id::{Id, Meta};

/// A core's poll in progress, and its runtime's hooks.
#[derive(Default)]
pub(crate) struct Watch {
    /// The core's poll count at the start of the poll running now; 0 between polls. Two
    /// readings a threshold apart that show the same non-zero number are one poll that has
    /// run at least that long.
    poll: AtomicU64,
    /// The id of the task being polled ([`Id::as_u64`]); 0 while none is (the `block_on`
    /// future, the loop itself).
    task: AtomicU64,
    /// Where that task was spawned; null before the first task poll. Stale (the last task's)
    /// while no task is polled: read it only with a non-zero `task`.
    at: AtomicPtr<Location<'static>>,
    /// The runtime's task hooks; `None` when none is set (then a poll checks one word).
    pub(crate) hooks: Option<Arc<Hooks>>,
}

impl Watch {
    /// A core's, with the runtime's `hooks`.
    pub(crate) fn new(hooks: Option<Arc<Hooks>>) -> Watch {
        Watch {
            hooks,
            ..Watch::default()
        }
    }

    /// A poll starts; `n`, the core's poll count, numbers it (never 0).
    #[inline]
    pub(crate) fn poll_starts(&self, n: u64) {
        self.poll.store(n, Ordering::Relaxed);
    }

    /// The poll has ended.
    #[inline]
    pub(crate) fn poll_ends(&self) {
        self.poll.store(0, Ordering::Relaxed);
    }

    /// The poll running now is `task`'s.
    #[inline]
    pub(crate) fn task_starts(&self, task: &Meta) {
        let at: *const Location<'static> = task.at;
        // Release: a reader that sees the id sees the location stored before it.
        self.at.store(at.cast_mut(), Ordering::Relaxed);
        self.task.store(task.id.as_u64(), Ordering::Release);
    }

    /// The task's poll has ended (the core's may go on: the `block_on` future's is no task's).
    #[inline]
    pub(crate) fn task_ends(&self) {
        self.task.store(0, Ordering::Relaxed);
    }

    /// The id of the task being polled, if one is.
    pub(crate) fn task_id(&self) -> Option<Id> {
        Id::from_u64(self.task.load(Ordering::Relaxed))
    }
}
