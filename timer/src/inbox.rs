//! Handing work to another core: its inbox and its published sleep word.
//!
//! The inbox carries every cross-thread hand-off of a core, not only timers: timer inserts and
//! cancels, and, as operations due "now" ([`Op::Now`]), woken tasks and remote spawns. It lives
//! in this crate because its wake rule is a timer rule (wake a sleeping core only if the new
//! deadline is earlier than the one it sleeps until), and so that it can be model-checked with
//! no runtime around it.
//!
//! # Protocol
//!
//! Each core publishes one atomic word. Bit 0 (`DIRTY`) says "something was pushed since you
//! last drained"; the other 63 bits say 0 while the core runs, otherwise the instant it is
//! programmed to wake (`NO_DEADLINE` when it sleeps with nothing armed).
//!
//! A pushing thread pushes its operation, then sets `DIRTY` with a read-modify-write and reads
//! the state it replaced. It wakes the core only if the core sleeps until later than the new
//! deadline, and then lowers the word to "running" with a compare-and-swap: of several racing
//! pushers exactly one wins that swap and writes the core's eventfd; the others see "running"
//! and leave it be. A task wake or a remote spawn is a deadline of 0 ("now").
//!
//! The core clears `DIRTY` before it drains the inbox, and goes to sleep only by swapping the
//! word from exactly "running, clean" to its wake-up instant. If a push slipped in after the
//! drain, `DIRTY` is set, the swap fails and the core drains again instead of sleeping. Every
//! step is a read-modify-write on the one word, so no push can be missed and no reasoning about
//! store-load ordering across two locations is needed; `loom-tests/` checks both properties.

use crate::sync::{AtomicU64, Mutex, Ordering};
use crate::{Slack, TimerHandle, TimerStats};

/// Set when something was pushed since the core last drained.
const DIRTY: u64 = 1;
/// The largest instant the word can hold; also "asleep with nothing armed".
pub const NO_DEADLINE: u64 = u64::MAX >> 1;

/// A timer operation handed to a core by another thread.
#[derive(Debug)]
pub enum Op<T> {
    /// Insert a timer with this deadline (ns), slack and value.
    Insert {
        /// Deadline in nanoseconds, on the target core's clock.
        deadline: u64,
        /// Slack.
        slack: Slack,
        /// The value handed back when it fires.
        value: T,
    },
    /// Cancel a timer the core inserted. Never wakes the core.
    Cancel(TimerHandle),
    /// Something the core must see now (a woken task, a remote spawn): a deadline of 0.
    Now(T),
}

/// What a push asks of the pusher.
#[must_use = "the pusher must wake the core when told to, or the hand-over is lost"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The core sleeps past the new deadline: write its eventfd (this pusher alone).
    Needed,
    /// The core runs, or is already being woken, or wakes early enough by itself.
    NotNeeded,
}

/// One core's inbox for operations from other threads (timers, task wakes, spawns), and its
/// sleep word.
///
/// # Examples
///
/// ```
/// use tickless_timer::internal::{Inbox, Op, Wake};
/// use tickless_timer::Slack;
///
/// let inbox = Inbox::new();
/// assert!(inbox.try_sleep(Some(5_000)));          // the core sleeps until 5 µs
/// let late = Op::Insert { deadline: 9_000, slack: Slack::None, value: () };
/// assert_eq!(inbox.push(late).unwrap(), Wake::NotNeeded); // it wakes before that anyway
/// let early = Op::Insert { deadline: 1_000, slack: Slack::None, value: () };
/// assert_eq!(inbox.push(early).unwrap(), Wake::Needed);   // this pusher writes the eventfd
/// inbox.woke();
/// let mut ops = Vec::new();
/// inbox.drain(&mut ops);
/// assert_eq!(ops.len(), 2);
/// ```
pub struct Inbox<T> {
    /// `DIRTY` | (0 = running, else the instant the core wakes by itself) << 1.
    word: AtomicU64,
    /// Operations not yet taken by the core; `None` once the core has closed its inbox.
    ops: Mutex<Option<Vec<Op<T>>>>,
    /// Pushes that had to wake the core.
    wakes_sent: AtomicU64,
    /// Pushes that did not.
    wakes_avoided: AtomicU64,
    /// For comparison only: wake a sleeping core on every push, whatever its deadline (the
    /// behaviour before Linux's lazy nohz kick of 2015).
    always_wake: bool,
}

impl<T> Default for Inbox<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Inbox<T> {
    /// An empty inbox of a running core.
    pub fn new() -> Self {
        Inbox {
            word: AtomicU64::new(0),
            ops: Mutex::new(Some(Vec::new())),
            wakes_sent: AtomicU64::new(0),
            wakes_avoided: AtomicU64::new(0),
            always_wake: false,
        }
    }

    /// An inbox that wakes its sleeping core on every push, whatever the deadline: the baseline
    /// the sleep-word rule is measured against. Not for production.
    pub fn always_waking() -> Self {
        Inbox {
            always_wake: true,
            ..Self::new()
        }
    }

    /// Hands an operation to the core (from any thread). An insert wakes the core only if it
    /// sleeps past the end of the timer's window (its deadline plus its slack; a deferrable
    /// timer never), `Now` only if it sleeps, a cancel never.
    ///
    /// # Errors
    ///
    /// The operation back, untouched, if the core has [closed](Self::close) its inbox: the caller
    /// drops it (the core will never look again).
    pub fn push(&self, op: Op<T>) -> Result<Wake, Op<T>> {
        let deadline = match &op {
            Op::Insert {
                deadline, slack, ..
            } => match slack {
                Slack::None => *deadline,
                Slack::Bounded(d) => deadline.saturating_add(crate::nanos(*d)),
                Slack::Unbounded => u64::MAX,
            },
            Op::Cancel(_) => u64::MAX,
            Op::Now(_) => 0,
        };
        match self.ops.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            Some(ops) => ops.push(op),
            None => return Err(op),
        }
        Ok(self.notify(deadline))
    }

    /// Tells the core that something it must see by `deadline` (ns; 0 for "now") was handed to
    /// it through some other queue. Call it after that queue's push. Same rule as
    /// [`push`](Self::push).
    pub fn notify(&self, deadline: u64) -> Wake {
        // The read-modify-write reads the latest state, and orders our push before the core's
        // clearing of DIRTY (or makes its attempt to sleep fail).
        let mut current = self.word.fetch_or(DIRTY, Ordering::AcqRel) | DIRTY;
        loop {
            let until = current >> 1;
            if until == 0 || (deadline >= until && !self.always_wake) {
                self.wakes_avoided.fetch_add(1, Ordering::Relaxed);
                return Wake::NotNeeded;
            }
            // Lower the word to "running": the core is about to be woken, and every pusher after
            // us sees that it need not wake it again.
            match self
                .word
                .compare_exchange(current, DIRTY, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.wakes_sent.fetch_add(1, Ordering::Relaxed);
                    return Wake::Needed;
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// Core side: whether anything may have been pushed since the last drain.
    pub fn is_dirty(&self) -> bool {
        self.word.load(Ordering::Acquire) & DIRTY != 0
    }

    /// Core side: takes every pushed operation, appending to `out`. Cheap when nothing was
    /// pushed (one load, no lock).
    pub fn drain(&self, out: &mut Vec<Op<T>>) {
        if !self.is_dirty() {
            return;
        }
        self.word.fetch_and(!DIRTY, Ordering::AcqRel);
        if let Some(ops) = self.ops.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            out.append(ops);
        }
    }

    /// Core side, at shutdown: closes the inbox and returns what was still in it. Every push
    /// after this fails and hands its operation back to its caller; every push before it is in
    /// the returned batch or an earlier drain. Idempotent.
    pub fn close(&self) -> Vec<Op<T>> {
        let ops = self.ops.lock().unwrap_or_else(|e| e.into_inner()).take();
        ops.unwrap_or_default()
    }

    /// Core side, while running and after a drain: publishes "asleep until `until`" (ns; `None`
    /// when nothing is armed). Returns `false`, publishing nothing, if a push came in since the
    /// drain: drain again instead of sleeping.
    pub fn try_sleep(&self, until: Option<u64>) -> bool {
        let until = until.map_or(NO_DEADLINE, |u| u.clamp(1, NO_DEADLINE));
        self.word
            .compare_exchange(0, until << 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Core side, on waking: publishes "running" again (keeping `DIRTY`).
    pub fn woke(&self) {
        self.word.fetch_and(DIRTY, Ordering::AcqRel);
    }

    /// The instant the core published it sleeps until; `None` while it runs.
    pub fn sleeping_until(&self) -> Option<u64> {
        match self.word.load(Ordering::Acquire) >> 1 {
            0 => None,
            until => Some(until),
        }
    }

    /// The remote-wake counters (the rest are zero).
    pub fn stats(&self) -> TimerStats {
        TimerStats {
            remote_wakes_sent: self.wakes_sent.load(Ordering::Relaxed),
            remote_wakes_avoided: self.wakes_avoided.load(Ordering::Relaxed),
            ..TimerStats::default()
        }
    }
}
