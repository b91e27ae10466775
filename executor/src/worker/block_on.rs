//! The `block_on` future's waker: a flag the loop checks each turn, plus the inbox's sleep word
//! when it is woken from another thread.
//!
//! # Protocol
//!
//! The waker sets `woken`, then (from another thread) notifies the core as a deadline of "now":
//! the notify sets the inbox's DIRTY bit, so a core that checked `woken` before the store and is
//! about to sleep fails its `try_sleep`, turns again and sees the flag; a core that already
//! sleeps is woken. Setting the flag after the notify would lose the wake: the core could drain
//! the DIRTY bit, find the flag still clear and sleep. `loom-tests/tests/idle_sequence.rs`
//! checks this on the production loop.

use std::sync::Arc;
use std::task::Wake;

use crate::context::with_current;
use crate::sync::{AtomicBool, Ordering};
use crate::worker::shared::{Shared, Unpark};

/// The `block_on` future's waker.
pub struct MainWaker<U: Unpark = tickless_io::internal::Unparker> {
    /// Set when the main future should be polled again.
    woken: AtomicBool,
    /// The core's shared half.
    shared: Arc<Shared<U>>,
}

impl<U: Unpark> MainWaker<U> {
    /// The waker of the main future of `shared`'s core; `woken` says whether to poll it first.
    pub fn new(shared: Arc<Shared<U>>, woken: bool) -> Arc<Self> {
        Arc::new(MainWaker {
            woken: AtomicBool::new(woken),
            shared,
        })
    }

    /// Core side: whether the main future was woken since the last call; clears the flag.
    pub fn take(&self) -> bool {
        self.woken.swap(false, Ordering::AcqRel)
    }

    /// Core side: whether the main future is woken, without clearing it.
    pub fn is_woken(&self) -> bool {
        self.woken.load(Ordering::Acquire)
    }

    /// Whether the caller runs on this waker's core (whose loop checks the flag anyway), and
    /// not inside the core's tokio runtime (a tokio task or tokio's reactor woke it while the
    /// core was parked or spinning there: the idle path looks at the inbox, not at the flag,
    /// so the notify must tell it).
    fn on_own_core(&self) -> bool {
        let own = Arc::as_ptr(&self.shared).cast::<()>();
        with_current(|core| {
            std::ptr::eq(Arc::as_ptr(core.shared()).cast::<()>(), own)
                && core.tokio().is_none_or(|t| !t.is_inside())
        })
        .unwrap_or(false)
    }
}

impl<U: Unpark> Wake for MainWaker<U> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // The flag first, then the notify: see the protocol above.
        self.woken.store(true, Ordering::Release);
        if !self.on_own_core() {
            self.shared.notify_now();
        }
    }
}
