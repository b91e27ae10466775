//! The stop request a [`Server`](super::Server) sends its accept loops, from any thread.

use std::task::{Context, Poll, Waker};

use crate::sync::{AtomicBool, Mutex, Ordering};

/// A one-shot, cross-thread stop request with a drain deadline, that one task per core waits
/// for. `loom-tests/tests/serve_stop.rs` checks a request racing the waiters.
#[derive(Debug)]
pub struct Stop {
    /// Set (once) by [`request`](Self::request).
    requested: AtomicBool,
    /// When open connections are aborted; set before `requested`.
    deadline: Mutex<Option<std::time::Instant>>,
    /// Each core's accept loop's waker, by core index.
    ///
    /// # Invariant
    ///
    /// Read and written only under this lock, and `requested` is checked under it by
    /// [`poll`](Self::poll): a request made after a poller found it unset finds that poller's
    /// waker here, so no wakeup is lost.
    wakers: Mutex<Vec<Option<Waker>>>,
}

impl Stop {
    /// A request not made yet, for `cores` waiters.
    pub fn new(cores: usize) -> Stop {
        Stop {
            requested: AtomicBool::new(false),
            deadline: Mutex::new(None),
            wakers: Mutex::new(vec![None; cores]),
        }
    }

    /// Asks every accept loop to stop, and open connections to end by `deadline`.
    pub fn request(&self, deadline: std::time::Instant) {
        let mut deadline_slot = self.deadline.lock().unwrap_or_else(|e| e.into_inner());
        deadline_slot.get_or_insert(deadline);
        drop(deadline_slot);
        let wakers: Vec<Waker> = {
            let mut slots = self.wakers.lock().unwrap_or_else(|e| e.into_inner());
            self.requested.store(true, Ordering::Release);
            slots.iter_mut().filter_map(Option::take).collect()
        };
        // Wake outside the lock: a wake may run the core's hand-over code.
        for w in wakers {
            w.wake();
        }
    }

    /// The drain deadline, once requested.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ready once the stop was requested; otherwise keeps core `core`'s waker.
    pub fn poll(&self, core: usize, cx: &mut Context<'_>) -> Poll<()> {
        if self.requested.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        let mut slots = self.wakers.lock().unwrap_or_else(|e| e.into_inner());
        if self.requested.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        match &mut slots[core] {
            Some(w) if w.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}
