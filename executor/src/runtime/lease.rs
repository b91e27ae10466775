//! Core 0's lease: which thread runs core 0 now.
//!
//! Core 0 has no thread of its own: it runs on the thread that calls `block_on`, so that the
//! `block_on` future need not be `Send` (as tokio's). A `Runtime` is `Send` and `Sync`, so
//! `block_on` may be called from any thread, and from several at once; core 0's state (its
//! queue, wheel, reactor: single-threaded, behind `Rc` and `RefCell`) must be used by one
//! thread at a time. The lease says which: a `block_on` takes it for its whole run, waiting
//! while another thread holds it, and gives it back when it returns or unwinds. The mutex
//! orders everything one holder did to core 0 before everything the next one does.
//!
//! A second `block_on` therefore waits for the first to return; it does not run beside it. A
//! `block_on` whose future waits for another thread's `block_on` to make progress waits for
//! ever (tokio's multi-thread runtime runs both). `loom-tests/tests/core_zero_lease.rs` checks
//! that two threads never hold it at once and that a waiter always gets it.

use crate::sync::{lock, Condvar, Mutex};

/// Who runs core 0: at most one thread at a time.
#[derive(Debug, Default)]
pub struct Lease {
    /// Whether a thread holds it.
    held: Mutex<bool>,
    /// Signalled when it is given back.
    given_back: Condvar,
}

/// Holds the [`Lease`] until dropped.
#[derive(Debug)]
#[must_use = "the lease is given back when the guard drops"]
pub struct Held<'a> {
    lease: &'a Lease,
}

impl Lease {
    /// A lease nobody holds.
    pub fn new() -> Lease {
        Lease::default()
    }

    /// Takes the lease, waiting while another thread holds it.
    pub fn take(&self) -> Held<'_> {
        let mut held = lock(&self.held);
        while *held {
            held = self
                .given_back
                .wait(held)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *held = true;
        Held { lease: self }
    }

    /// Takes the lease if nobody holds it.
    pub fn try_take(&self) -> Option<Held<'_>> {
        let mut held = lock(&self.held);
        if *held {
            return None;
        }
        *held = true;
        Some(Held { lease: self })
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        *lock(&self.lease.held) = false;
        self.lease.given_back.notify_one();
    }
}
