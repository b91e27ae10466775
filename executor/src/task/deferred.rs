//! Where a `spawn_at` task waits: its timer on its core's wheel, known to its `JoinHandle` so
//! that an abort can cancel it at once.
//!
//! # Protocol
//!
//! The handle pushes the task's insert into the core's inbox at spawn; the core inserts it and
//! records the timer's handle here. `abort` pushes an `Abort` into the same inbox, which the core
//! takes after the insert (the inbox is first in, first out): it takes the handle from here and
//! cancels the timer, dropping the task. When the timer fires first, the core marks the task
//! started, and the abort reaches the task through its waker and abort flag instead.

use tickless_timer::TimerHandle;

use crate::sync::{lock, Mutex};

/// Where a `spawn_at` task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// In its core's inbox, not yet inserted.
    Handed,
    /// In the wheel, under this handle.
    InWheel(TimerHandle),
    /// Fired (or cancelled): no longer in the wheel.
    Gone,
}

/// A `spawn_at` task's timer, shared by its core and its handle.
#[derive(Debug)]
pub struct DeferredStart {
    /// Where the task is.
    place: Mutex<Place>,
}

impl DeferredStart {
    /// A task handed to its core's inbox.
    pub(crate) fn new() -> DeferredStart {
        DeferredStart {
            place: Mutex::new(Place::Handed),
        }
    }

    /// Core side: the task is in the wheel under `handle`.
    pub(crate) fn set(&self, handle: TimerHandle) {
        let mut place = lock(&self.place);
        if *place == Place::Handed {
            *place = Place::InWheel(handle);
        }
    }

    /// Core side: the timer fired; the task is queued to run.
    pub(crate) fn started(&self) {
        *lock(&self.place) = Place::Gone;
    }

    /// Core side, on an abort: the handle to cancel, if the task still waits in the wheel.
    pub(crate) fn take(&self) -> Option<TimerHandle> {
        match std::mem::replace(&mut *lock(&self.place), Place::Gone) {
            Place::InWheel(h) => Some(h),
            Place::Handed | Place::Gone => None,
        }
    }

    /// Handle side: whether the task may still wait in the wheel (or be on its way there).
    pub(crate) fn is_waiting(&self) -> bool {
        *lock(&self.place) != Place::Gone
    }
}
