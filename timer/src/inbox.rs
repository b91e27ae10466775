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
//!
//! # One wakeup for a remote shrink
//!
//! Woken to take an earlier timer, a core wakes twice: now, to re-arm its device, and then at
//! the deadline. Where the core's clock event device can be programmed from another thread
//! (a timerfd: [`RemoteArming::install`]), a pusher whose insert shrinks the sleep programs the
//! device itself, and the core wakes once, at the deadline. The pusher lowers the word's instant
//! to the timer's deadline, less the core's wakeup lead ([`RemoteArming::set_lead`]: as the
//! core would have programmed it), with a compare-and-swap that keeps the core "asleep" (so that a later
//! `Now` still wakes it at once, and a later, earlier insert lowers it again), then, holding the
//! device lock, reads the word again and programs the device for the instant it now says (the
//! smallest any pusher wrote), unless the core has woken meanwhile (the word says "running": the
//! core drains before it sleeps, and arms for itself). The core programs its own device only
//! under the same lock ([`RemoteArming::arm_local`]), so a pusher's programming never lands
//! after the core's own; and it learns that its device was programmed behind its queue's back
//! from [`RemoteArming::take_touched`], set under the lock before the pusher programs.
//! `loom-tests/tests/timer_inbox.rs` checks that the device ends armed no later than every
//! timer handed over, or the core is woken.

use crate::sync::{AtomicBool, AtomicU64, Mutex, MutexGuard, Ordering};
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
    /// The core runs, or is already being woken, or wakes early enough by itself (also when
    /// the push programmed the core's device: [`RemoteArming`]).
    NotNeeded,
}

/// A core's clock event device as other threads may program it while the core sleeps (a
/// timerfd; see the module docs, "One wakeup for a remote shrink").
pub trait RemoteDevice: Send {
    /// Programs the device to fire at `at` (nanoseconds on the core's clock), replacing its
    /// programming. Called with the device lock held, only while the core sleeps.
    fn arm_remote(&self, at: u64);
}

/// The lock under which a core's clock event device is programmed, by the core or, while it
/// sleeps, by a pusher whose timer shrinks its sleep (module docs).
pub struct RemoteArming {
    /// The device other threads may program; `None` while they may not (no timerfd, paused
    /// time): a shrinking push then wakes the core.
    device: Mutex<Option<Box<dyn RemoteDevice>>>,
    /// Whether a device is installed: read without the lock to choose the path, decided under
    /// it.
    installed: AtomicBool,
    /// A pusher programmed the device since the core last armed it or looked.
    touched: AtomicBool,
    /// The core's wakeup lead (ns): a pusher programs the device this much ahead of the
    /// timer's deadline, as the core itself does.
    lead: AtomicU64,
    /// Pushes that programmed the device instead of waking the core.
    arms: AtomicU64,
}

impl RemoteArming {
    fn new() -> Self {
        RemoteArming {
            device: Mutex::new(None),
            installed: AtomicBool::new(false),
            touched: AtomicBool::new(false),
            lead: AtomicU64::new(0),
            arms: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Box<dyn RemoteDevice>>> {
        self.device.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Core side: lets other threads program the device (`Some`), or stops them (`None`: the
    /// device cannot be programmed from there now). Waits for a pusher programming it.
    pub fn install(&self, device: Option<Box<dyn RemoteDevice>>) {
        let mut slot = self.lock();
        self.installed.store(device.is_some(), Ordering::Relaxed);
        *slot = device;
    }

    /// Core side: runs `arm` (the core programming its own device) under the device lock, so
    /// that no pusher's programming lands after it; what a pusher programmed before is replaced,
    /// so the core's queue knows the device again. Without an installed device, no lock.
    pub fn arm_local<R>(&self, arm: impl FnOnce() -> R) -> R {
        if !self.installed.load(Ordering::Relaxed) {
            return arm();
        }
        let _guard = self.lock();
        self.touched.store(false, Ordering::Relaxed);
        arm()
    }

    /// Core side, when its device fired: whether a pusher programmed it since the core last
    /// armed it (then the queue's idea of what is armed is stale: `TimerQueue::device_lost`).
    pub fn take_touched(&self) -> bool {
        self.touched.load(Ordering::Acquire) && self.touched.swap(false, Ordering::AcqRel)
    }

    /// Core side: publishes the wakeup lead the core has learned, for pushers to program the
    /// device as far ahead of a deadline as the core would.
    pub fn set_lead(&self, ns: u64) {
        self.lead.store(ns, Ordering::Relaxed);
    }

    /// Pushes that programmed the device instead of waking the core.
    pub fn arms(&self) -> u64 {
        self.arms.load(Ordering::Relaxed)
    }
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
    /// The core's device, for a push that shrinks its sleep.
    remote: RemoteArming,
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
            remote: RemoteArming::new(),
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
    ///
    /// An insert that shrinks the sleep of a core whose device is
    /// [installed](RemoteArming::install) programs that device for the timer's deadline instead
    /// of waking the core (module docs).
    pub fn push(&self, op: Op<T>) -> Result<Wake, Op<T>> {
        self.push_if(op, || true)
    }

    /// [`push`](Self::push), if `accept` says so: `accept` is asked under the lock that
    /// [`drain_locked`](Self::drain_locked) takes, so a state the core changes before such a
    /// drain (core 0 no longer run by any thread, say) is seen by every push that the drain
    /// does not take.
    ///
    /// # Errors
    ///
    /// The operation back, untouched, if `accept` said no or the core has closed its inbox.
    pub fn push_if(&self, op: Op<T>, accept: impl FnOnce() -> bool) -> Result<Wake, Op<T>> {
        let (deadline, arm_at) = match &op {
            Op::Insert {
                deadline, slack, ..
            } => match slack {
                Slack::None => (*deadline, Some(*deadline)),
                Slack::Bounded(d) => (deadline.saturating_add(crate::nanos(*d)), Some(*deadline)),
                Slack::Unbounded => (u64::MAX, None),
            },
            Op::Cancel(_) => (u64::MAX, None),
            Op::Now(_) => (0, None),
        };
        match self.ops.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            Some(ops) if accept() => ops.push(op),
            _ => return Err(op),
        }
        Ok(self.notify_or_arm(deadline, arm_at))
    }

    /// Tells the core that something it must see by `deadline` (ns; 0 for "now") was handed to
    /// it through some other queue. Call it after that queue's push. Same rule as
    /// [`push`](Self::push).
    pub fn notify(&self, deadline: u64) -> Wake {
        self.notify_or_arm(deadline, None)
    }

    /// [`notify`](Self::notify) for something due by `deadline`, which the core's device may be
    /// programmed for at `arm_at` (a timer's deadline, before its slack) instead of waking the
    /// core.
    fn notify_or_arm(&self, deadline: u64, arm_at: Option<u64>) -> Wake {
        // The read-modify-write reads the latest state, and orders our push before the core's
        // clearing of DIRTY (or makes its attempt to sleep fail).
        let mut current = self.word.fetch_or(DIRTY, Ordering::AcqRel) | DIRTY;
        let arm_at = arm_at.filter(|_| !self.always_wake);
        loop {
            let until = current >> 1;
            if until == 0 || (deadline >= until && !self.always_wake) {
                self.wakes_avoided.fetch_add(1, Ordering::Relaxed);
                return Wake::NotNeeded;
            }
            if let Some(at) = arm_at.filter(|_| self.remote.installed.load(Ordering::Relaxed)) {
                // Still asleep, but until `at` less the core's wakeup lead (what the core would
                // publish for this timer): a later `Now` still wakes it, a later, earlier insert
                // lowers it again. (Below `until`: `at` is at most `deadline`.)
                let at = at.saturating_sub(self.remote.lead.load(Ordering::Relaxed));
                let lowered = (at.clamp(1, NO_DEADLINE) << 1) | DIRTY;
                match self.word.compare_exchange(
                    current,
                    lowered,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return self.arm_remote().unwrap_or_else(|| self.wake_sleeping()),
                    Err(actual) => {
                        current = actual;
                        continue;
                    }
                }
            }
            match self.claim_wake(current) {
                Ok(wake) => return wake,
                Err(actual) => current = actual,
            }
        }
    }

    /// Lowers the word from `current` (asleep) to "running": the core is about to be woken by
    /// this pusher, and every pusher after it sees that it need not wake it again. The word as
    /// it was instead, if it changed since `current`.
    fn claim_wake(&self, current: u64) -> Result<Wake, u64> {
        self.word
            .compare_exchange(current, DIRTY, Ordering::AcqRel, Ordering::Acquire)?;
        self.wakes_sent.fetch_add(1, Ordering::Relaxed);
        Ok(Wake::Needed)
    }

    /// Wakes the core if it still sleeps (after a lowering whose device was uninstalled
    /// meanwhile: the instant in the word is this pusher's own).
    fn wake_sleeping(&self) -> Wake {
        let mut current = self.word.load(Ordering::Acquire);
        while current >> 1 != 0 {
            match self.claim_wake(current) {
                Ok(wake) => return wake,
                Err(actual) => current = actual,
            }
        }
        self.wakes_avoided.fetch_add(1, Ordering::Relaxed);
        Wake::NotNeeded
    }

    /// After lowering the sleeping core's instant: programs its device, under the lock, for
    /// the instant the word says now (the smallest any pusher wrote), unless the core has woken
    /// since. `None` if the device was uninstalled meanwhile (the caller wakes the core).
    fn arm_remote(&self) -> Option<Wake> {
        let slot = self.remote.lock();
        let device = slot.as_ref()?;
        match self.word.load(Ordering::Acquire) >> 1 {
            // Woken since (by itself or a `Now`): it drains before it sleeps, and arms for
            // itself, under this lock, after us.
            0 => {}
            until => {
                // Before programming: the core, woken by it, must see that its device was
                // programmed behind its queue's back.
                self.remote.touched.store(true, Ordering::Release);
                device.arm_remote(until);
                self.remote.arms.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.wakes_avoided.fetch_add(1, Ordering::Relaxed);
        Some(Wake::NotNeeded)
    }

    /// The lock the core's device is programmed under, by the core and by pushers (module
    /// docs).
    pub fn remote(&self) -> &RemoteArming {
        &self.remote
    }

    /// Core side, on the core's own thread: marks the inbox dirty, so that the core's next look
    /// at it (before a park, a spin's check for work) finds something to take, without a
    /// wake and without counting one: for what the core's thread handed the core while inside
    /// a wait of the core's own that the core ends by looking at the DIRTY bit (a tokio
    /// runtime the core parks in, whose tasks woke the core's `block_on` future).
    pub fn mark_dirty(&self) {
        self.word.fetch_or(DIRTY, Ordering::AcqRel);
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

    /// Core side: takes every pushed operation, appending to `out`, looking under the lock
    /// whatever `DIRTY` says (a push sets it only after it unlocks): after this, every
    /// [`push_if`](Self::push_if) either was taken or saw what the core changed before it.
    pub fn drain_locked(&self, out: &mut Vec<Op<T>>) {
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
            remote_arms: self.remote.arms(),
            ..TimerStats::default()
        }
    }
}
