//! The runtime's panic guards: every place that drops or wakes something the user wrote goes
//! through one of these, and a panic there is counted on the current core (the poll's own
//! guard is in `task::harness`, where the panic becomes the task's result).
//!
//! This file is below the core in the crate's layers (the blocking pool and the core's timers
//! use it): it does not know the core, only the core's [`Caught`] counters, which the guard
//! that enters a core (`context::Entered`) makes current on the thread with a [`Counting`].

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::Waker;

/// The panics one core caught in the destructors and wakes of user values: its `drop_panics`
/// and (with the reactor's own) `wake_panics`. Only the core's thread touches them.
#[derive(Default)]
pub(crate) struct Caught {
    /// Destructors (of task futures and outputs, timers' and hand-overs' values) that panicked.
    drops: Cell<u64>,
    /// Wakes (by timers, hand-overs, the blocking pool, completed joins) that panicked.
    wakes: Cell<u64>,
}

impl Caught {
    /// Counts a destructor that panicked.
    pub(crate) fn count_drop(&self) {
        self.drops.set(self.drops.get() + 1);
    }

    /// Counts a wake that panicked.
    pub(crate) fn count_wake(&self) {
        self.wakes.set(self.wakes.get() + 1);
    }

    /// Destructors that panicked so far.
    pub(crate) fn drops(&self) -> u64 {
        self.drops.get()
    }

    /// Wakes that panicked so far.
    pub(crate) fn wakes(&self) -> u64 {
        self.wakes.get()
    }
}

thread_local! {
    /// The counters of the core entered on this thread (null when none).
    ///
    /// Invariant: it is null, or it points to the counters the innermost live [`Counting`] of
    /// this thread was made with, which its maker keeps valid while the guard lives. Only
    /// [`Counting::new`] and `Counting`'s drop write it, innermost guard first (the same
    /// discipline as the current core's pointer in `context`, whose guard holds this one).
    static CURRENT: Cell<*const Caught> = const { Cell::new(std::ptr::null()) };
}

/// Makes one core's [`Caught`] counters the ones panics on this thread are counted in, until
/// dropped; then puts back the counters current before. `!Send` (it holds a raw pointer).
pub(crate) struct Counting {
    /// The counters current before (null: none), kept valid by the guard outside this one.
    previous: *const Caught,
}

impl Counting {
    /// Makes `caught` current on this thread.
    ///
    /// # Safety
    ///
    /// `caught` must stay valid while the guard lives, and the guard must be dropped on this
    /// thread before every `Counting` made earlier on it (a guard on the stack, or a field of
    /// one, is).
    pub(crate) unsafe fn new(caught: *const Caught) -> Counting {
        Counting {
            previous: CURRENT.with(|c| c.replace(caught)),
        }
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// Counts on this thread's current counters; nothing when none is current (a blocking-pool
/// thread, a thread outside any runtime).
fn count(f: impl FnOnce(&Caught)) {
    // A thread-local without a destructor is never destroyed: `with` does not fail.
    let caught = CURRENT.with(Cell::get);
    if caught.is_null() {
        return;
    }
    // SAFETY: a non-null `CURRENT` points to the counters of the innermost live `Counting` of
    // this thread (the invariant above), whose maker keeps them valid while it lives; it lives
    // on longer than this call, further down this thread's stack. `Caught` is not `Sync`, and
    // the reference is used on this thread only.
    f(unsafe { &*caught });
}

/// Drops `value`, catching (and counting, as `drop_panics`) a panic of its destructor.
pub(crate) fn drop_caught<T>(value: T) {
    if catch_unwind(AssertUnwindSafe(|| drop(value))).is_err() {
        count(Caught::count_drop);
    }
}

/// Wakes `waker`, catching (and counting, as `wake_panics`) a panic of the wake.
pub(crate) fn wake_caught(waker: Waker) {
    if catch_unwind(AssertUnwindSafe(|| waker.wake())).is_err() {
        count(Caught::count_wake);
    }
}

/// Runs `f`, a hook the user gave the runtime, catching (and counting, as `wake_panics`) a
/// panic; the panic's payload is dropped under a guard of its own.
pub(crate) fn call_caught(f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        count(Caught::count_wake);
        drop_caught(payload);
    }
}
