//! The [`Kennel`]: where a runtime's stall-detector watchdog sleeps while every core does, and
//! how a core that wakes wakes it. The watchdog's side of the protocol is
//! `runtime::watchdog::sleep_while_idle`; the core's is [`Kennel::rouse`], called through
//! `Watch::woke` and `Watch::enter`. `loom-tests/tests/watchdog_kennel.rs` runs both.
//!
//! Its atomics, lock and thread handle are `crate::sync`'s, so that the model checks them.

use crate::sync::{fence, lock, AtomicBool, Mutex, Ordering, Thread};

/// Where a runtime's watchdog sleeps while every core is idle, and what wakes it.
///
/// # Protocol
///
/// The watchdog sets `asleep`, issues a `SeqCst` fence, then reads every core's idle state
/// (its inbox's sleep word, its `active` flag), and parks only if all are idle. A core, when
/// it wakes from a park (after publishing "running" in its sleep word) or starts its loop
/// (after setting `active`), issues a `SeqCst` fence and then reads `asleep`. Of the two
/// fences, whichever comes second in their total order makes its side see the other's write:
/// either the watchdog sees the core running and does not park, or the core sees `asleep` and
/// unparks it. So a core that starts a poll never does so while the watchdog sleeps unaware.
///
/// The watchdog's thread is put here by that thread itself ([`attach`](Kennel::attach)),
/// before it first lies down: a core that takes `asleep` from it (its `swap`) finds the
/// thread to unpark. (Set by the thread that started it, after the start, it could come too
/// late: a watchdog that lay down first, and a core that woke in between, would leave it
/// parked for good.) A stop ([`stop`](Kennel::stop)) sets its flag before it looks for the
/// thread, under the same lock: a watchdog not attached yet sees the flag before it parks.
#[derive(Default)]
pub struct Kennel {
    /// The watchdog parks, or is about to.
    asleep: AtomicBool,
    /// The watchdog must end.
    stop: AtomicBool,
    /// The watchdog's thread, once it has attached.
    thread: Mutex<Option<Thread>>,
}

impl Kennel {
    /// Watchdog side, on its thread before anything else: the thread cores wake.
    pub fn attach(&self) {
        *lock(&self.thread) = Some(crate::sync::current());
    }

    /// Watchdog side: about to look at the cores once more before it parks.
    pub(crate) fn lie_down(&self) {
        self.asleep.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// Watchdog side: it will not park, or has woken.
    pub(crate) fn get_up(&self) {
        self.asleep.store(false, Ordering::Relaxed);
    }

    /// Watchdog side: whether it should stay parked (no core has woken it, no stop).
    pub(crate) fn stays_asleep(&self) -> bool {
        self.asleep.load(Ordering::Acquire) && !self.stopped()
    }

    /// Whether the watchdog must end.
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Tells the watchdog to end, and wakes it (the runtime's drop, which then joins it).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.unpark();
    }

    /// Core side, after it publishes that it runs: wakes the watchdog if it sleeps. Whether
    /// it did (this core took `asleep`, and unparked the thread).
    #[inline]
    pub(crate) fn rouse(&self) -> bool {
        fence(Ordering::SeqCst);
        if self.asleep.load(Ordering::Relaxed) && self.asleep.swap(false, Ordering::AcqRel) {
            self.unpark();
            return true;
        }
        false
    }

    /// Unparks the watchdog's thread, if it has attached (out of line: the first core to
    /// wake after the watchdog slept pays it, the others a load).
    #[inline(never)]
    fn unpark(&self) {
        if let Some(thread) = &*lock(&self.thread) {
            thread.unpark();
        }
    }
}
