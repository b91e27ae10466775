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

    /// Where the wake comes from: the core's own thread running the loop (which checks the
    /// flag anyway), the core's own thread inside its tokio runtime (a tokio task or tokio's
    /// reactor woke it while the core was parked or spinning there: the idle path looks at the
    /// inbox's DIRTY bit, not at the flag), or another thread.
    fn woken_from(&self) -> From {
        let own = Arc::as_ptr(&self.shared).cast::<()>();
        with_current(|core| {
            if !std::ptr::eq(Arc::as_ptr(core.shared()).cast::<()>(), own) {
                From::Elsewhere
            } else if core.tokio().is_some_and(|t| t.is_inside()) {
                From::OwnTokio
            } else {
                From::OwnLoop
            }
        })
        .unwrap_or(From::Elsewhere)
    }
}

/// Where the `block_on` future was woken from (see [`MainWaker::woken_from`]).
enum From {
    /// The core's loop, on its own thread.
    OwnLoop,
    /// The core's own thread, inside its tokio runtime.
    OwnTokio,
    /// Another thread.
    Elsewhere,
}

impl<U: Unpark> Wake for MainWaker<U> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // The flag first, then the notify: see the protocol above.
        self.woken.store(true, Ordering::Release);
        match self.woken_from() {
            From::OwnLoop => {}
            // No wake to send: the core's thread is here. The mark ends its tokio park (the
            // `on_thread_park` check) or its spin.
            From::OwnTokio => self.shared.inbox.mark_dirty(),
            From::Elsewhere => self.shared.notify_now(),
        }
    }
}
