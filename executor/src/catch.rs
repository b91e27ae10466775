//! The runtime's panic guards: every place that drops or wakes something the user wrote goes
//! through one of these, and a panic there is counted on the current core (the poll's own
//! guard is in `task::harness`, where the panic becomes the task's result).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::Waker;

use crate::context::with_current;

/// Drops `value`, catching (and counting, as `drop_panics`) a panic of its destructor.
pub(crate) fn drop_caught<T>(value: T) {
    if catch_unwind(AssertUnwindSafe(|| drop(value))).is_err() {
        with_current(|core| core.count_drop_panic());
    }
}

/// Wakes `waker`, catching (and counting, as `wake_panics`) a panic of the wake.
pub(crate) fn wake_caught(waker: Waker) {
    if catch_unwind(AssertUnwindSafe(|| waker.wake())).is_err() {
        with_current(|core| core.count_wake_panic());
    }
}
