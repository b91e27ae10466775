//! The core's timers: its wheel and timerfd (a `TimerQueue`), its clock, and the small set of
//! operations the time types and the loop use.
//!
//! # Invariants
//!
//! - Deadlines are nanoseconds on the core's clock (see [`Clock`]); they are taken from a fresh
//!   clock read where they are made (never early), while expiry uses `last_now`, the loop turn's
//!   one reading.
//! - A deadline at or before `last_now` is due: registering it completes at once; a later one
//!   goes into the wheel, and one that has passed since `last_now` fires at the loop's next
//!   turn (an insert before the armed deadline makes the queue ask for a clock read).
//! - The timerfd is programmed only by the queue (which alone knows what is armed), at most
//!   once per idle transition, as the re-arm policy decides.
//! - Nothing here wakes or drops user code while the queue is borrowed: fired values are
//!   handed back to the caller, which wakes them after the borrow ends.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::task::Waker;

use async_task::Runnable;
use tickless_timer::{Config, Slack, TimerHandle, TimerQueue, TimerStats};

use crate::task::DeferredStart;
use crate::worker::clock::Clock;
use crate::worker::device::TimerFdDevice;

/// Timers fired in one batch before the loop turns back to tasks and I/O.
pub(crate) const TIMER_BUDGET: usize = 1024;

/// What a core's timer wheel and inbox carry.
pub enum TimerValue {
    /// A `Sleep`'s task, to wake.
    Wake(Waker),
    /// A task to run (`Handle::spawn`, a wake from another thread).
    Run(Runnable),
    /// A task to run from a deadline on (`Handle::spawn_at`), in the wheel until then.
    RunAt(Runnable, Arc<DeferredStart>),
    /// Abort a `spawn_at` task still waiting in the wheel (from its `JoinHandle::abort`).
    Abort(Arc<DeferredStart>),
}

/// The core's timers.
pub(crate) struct Timers {
    /// The wheel, the re-arm policy and the timerfd.
    queue: RefCell<TimerQueue<TimerValue, TimerFdDevice>>,
    /// Real or paused time; shared with the device, which converts deadlines with it.
    clock: Rc<Clock>,
    /// `now` as of the last expiry: deadlines at or before it are already due.
    last_now: Cell<u64>,
    /// Slack of timers that give none.
    default_slack: Slack,
}

impl Timers {
    /// The timers of a core, over its timerfd.
    pub(crate) fn new(
        timer: tickless_io::TimerFd,
        clock: Clock,
        config: Config,
        default_slack: Slack,
    ) -> Timers {
        let clock = Rc::new(clock);
        let device = TimerFdDevice::new(timer, clock.clone());
        Timers {
            queue: RefCell::new(TimerQueue::new(device, config)),
            clock,
            last_now: Cell::new(0),
            default_slack,
        }
    }

    /// The core's clock.
    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    // --- What the time types use. ---

    /// Registers a sleep's waker for `deadline` (an instant) with `slack` (the core's default
    /// when `None`). `None` if the deadline is already due by the core's last reading: the
    /// sleep completes now, and nothing is registered.
    pub(crate) fn register(
        &self,
        deadline: std::time::Instant,
        slack: Option<Slack>,
        waker: &Waker,
    ) -> Option<TimerHandle> {
        let ns = self.clock.ns(deadline);
        if ns <= self.last_now.get() {
            return None;
        }
        let slack = slack.unwrap_or(self.default_slack);
        let value = TimerValue::Wake(waker.clone());
        Some(self.queue.borrow_mut().insert(ns, slack, value))
    }

    /// Whether a registered sleep has fired; if not, makes sure `waker` is the one woken.
    pub(crate) fn poll_registered(&self, handle: TimerHandle, waker: &Waker) -> bool {
        match self.queue.borrow_mut().get_mut(handle) {
            // Fired: the wheel handed back our waker and forgot the handle.
            None => true,
            Some(TimerValue::Wake(w)) => {
                if !w.will_wake(waker) {
                    w.clone_from(waker);
                }
                false
            }
            Some(_) => unreachable!("a Sleep's handle names a task, not a waker"),
        }
    }

    /// Moves a registered sleep to `deadline`, keeping its entry; `false` if it already fired.
    pub(crate) fn reset(
        &self,
        handle: TimerHandle,
        deadline: std::time::Instant,
        slack: Option<Slack>,
    ) -> bool {
        let ns = self.clock.ns(deadline);
        let slack = slack.unwrap_or(self.default_slack);
        self.queue.borrow_mut().reset(handle, ns, slack)
    }

    /// Cancels a timer of this core and returns its value, to drop outside the borrow. `None`
    /// if it already fired, or while the queue is borrowed (the core's own shutdown is taking
    /// every timer: nothing to cancel).
    pub(crate) fn cancel(&self, handle: TimerHandle) -> Option<TimerValue> {
        self.queue.try_borrow_mut().ok()?.cancel(handle)
    }

    /// Pauses the core's clock (`time::pause`). `false` if it was paused already.
    pub(crate) fn pause(&self) -> bool {
        let paused = self.clock.pause();
        if paused {
            // Paused time never arms the timerfd: what the queue armed is no longer what
            // the core wakes by (a real arming left behind fires once, and is ignored).
            self.queue.borrow_mut().device_lost();
        }
        paused
    }

    /// Resumes the core's clock (`time::resume`). `false` if it was not paused.
    pub(crate) fn resume(&self) -> bool {
        let resumed = self.clock.resume();
        if resumed {
            // The timerfd knows nothing of what was armed while paused: arm it afresh.
            self.queue.borrow_mut().device_lost();
        }
        resumed
    }

    // --- What the loop uses. ---

    /// Inserts a timer handed over by another thread. A `spawn_at` task learns its handle.
    pub(crate) fn insert(&self, deadline: u64, slack: Slack, value: TimerValue) {
        let deferred = match &value {
            TimerValue::RunAt(_, d) => Some(d.clone()),
            _ => None,
        };
        let handle = self.queue.borrow_mut().insert(deadline, slack, value);
        if let Some(d) = deferred {
            d.set(handle);
        }
    }

    /// Takes up to [`TIMER_BUDGET`] due timers into `fired`. Returns whether more are due.
    ///
    /// The timerfd announces every timer it is armed for, and its event already advanced the
    /// wheel (see [`device_event`](Self::device_event)): the clock is read here only for timers
    /// the device does not know about (or when time is paused, where reads are free).
    pub(crate) fn expire(&self, fired: &mut Vec<TimerValue>) -> bool {
        let mut queue = self.queue.borrow_mut();
        if queue.needs_clock() || self.clock.is_paused() {
            if queue.is_empty() {
                return false;
            }
            let now = self.clock.now();
            self.last_now.set(now);
            queue.advance(now);
        }
        if !queue.has_expired() {
            return false;
        }
        while fired.len() < TIMER_BUDGET {
            match queue.pop_expired() {
                Some((_, TimerValue::RunAt(runnable, deferred))) => {
                    deferred.started();
                    fired.push(TimerValue::Run(runnable));
                }
                Some((_, value)) => fired.push(value),
                None => return false,
            }
        }
        queue.has_expired()
    }

    /// The reactor saw an event of the timerfd: if something is armed, one clock read tells
    /// the queue whether it has passed (or the event is stale).
    pub(crate) fn device_event(&self) {
        let mut queue = self.queue.borrow_mut();
        if queue.armed().is_some() {
            let now = self.clock.now();
            self.last_now.set(self.last_now.get().max(now));
            queue.device_fired(now);
        }
    }

    /// The idle flush: applies the deferred re-arm (at most one `timerfd_settime`) and returns
    /// the deadline the timerfd is armed for.
    pub(crate) fn on_idle(&self) -> Option<u64> {
        self.queue.borrow_mut().on_idle()
    }

    /// The earliest instant a non-deferrable timer may fire.
    pub(crate) fn next_expiration(&self) -> Option<u64> {
        self.queue.borrow_mut().next_expiration()
    }

    /// Makes every timer due at `now` (a reading just taken) ready to expire.
    pub(crate) fn advance(&self, now: u64) {
        self.last_now.set(now);
        self.queue.borrow_mut().advance(now);
    }

    /// Takes every pending timer out, for the core's shutdown (to drop them in its context).
    pub(crate) fn take_all(&self) -> Vec<TimerValue> {
        self.queue.borrow_mut().drain()
    }

    /// The queue's counters.
    pub(crate) fn stats(&self) -> TimerStats {
        self.queue.borrow().stats()
    }
}
