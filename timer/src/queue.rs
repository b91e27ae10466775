//! One core's timers: the wheel, the device and the re-arm policy between them.
//!
//! # The device's state, as the queue keeps it
//!
//! The device (a timerfd, or an epoll wait's timeout) remembers nothing the queue can read
//! back: the queue alone knows what it armed. Eight fields of [`TimerQueue`] say what it
//! believes, and every method below keeps them to these rules.
//!
//! | field | means | set | cleared |
//! |---|---|---|---|
//! | `armed` | the tick the device must have fired by (the end of the earliest window at the last arming); `None`: disarmed | `program` | `device_fired` (the arming is spent), `device_lost` |
//! | `armed_lead` | how far ahead of `armed` the device was programmed, ns (the lead at that arming) | `program` | (rewritten by the next `program`) |
//! | `programmed` | the instant the device is programmed for, ns: `armed` less `armed_lead` (kept, not derived, so that an idle flush converts nothing) | `program` | with `armed` |
//! | `leading` | whether `program` subtracts the learned lead (off on paused time) | `set_leading` | `set_leading` |
//! | `dirty` | something happened that the policy may re-arm for: the next `on_idle` looks | an insert earlier than `armed`, a cancel (`OnIdle`), a reset, an expiry, `device_fired`, `device_lost` | `on_idle` |
//! | `unarmed` | a timer may be due that the device will not announce (inserted before `armed` since the last flush, or the arming is spent): a core that stays busy must read the clock | with `dirty`, except on a cancel | `on_idle` (after it, the device fires no later than the earliest timer, whatever the policy) |
//! | `early` | the last expiry came by the lead ahead of `armed` and found nothing due, or was another thread's programming for a timer it handed over, which leads by the same lead: the driver waits the rest out awake | `device_fired`, `remote_fired` | `take_early`, an `advance` that finds something due, `device_lost` |
//! | `detached` | timers inserted while `armed` was no later than the end of their windows, kept out of the wheel's lists | `insert_prepared` | `attach_detached`, before anything reads the wheel for expiry or arming |
//!
//! The states a core's driver sees, and their transitions:
//!
//! ```text
//!             insert earlier than armed (Lazy/OnIdle): dirty + unarmed
//!   ARMED ───────────────────────────────────────────────────────► ARMED, STALE
//!   (armed = Some, clean)                                          (dirty: on_idle re-arms
//!     ▲  │  device fires, something due: armed = None,             if the policy says so)
//!     │  │  dirty + unarmed, timers ready ────────► SPENT ◄─────────────┘ device fires
//!     │  │                                          (armed = None, dirty + unarmed:
//!     │  │  device fires by the lead, nothing due   the next on_idle arms afresh)
//!     │  └─────────────────────────────────────► EARLY (armed = None, early:
//!     │                                          the driver spins to the deadline)
//!     └──────────────────── on_idle: program(earliest) ◄── SPENT, EARLY, STALE
//! ```
//!
//! `Lazy` leaves an arming that is earlier than the earliest timer in place (STALE stays
//! armed): it fires once, finds nothing due, and counts as spurious. `Eager` never leaves
//! STALE: every change re-programs at once. Detached timers need `armed` no later than their
//! window's end, which holds until the device fires (SPENT), when `advance` attaches them.

use std::time::Duration;

use crate::device::ClockDevice;
use crate::lead::Lead;
use crate::slab::{Fill, TimerHandle};
use crate::slack::{Slack, Ticks};
use crate::stats::TimerStats;
use crate::wheel::{Held, Lane, Wheel};

mod young;

/// When the queue re-programs its clock event device.
///
/// # Why `Lazy` is the default
///
/// The policy table in the README (`python3 benches/scripts/compare_readme.py`) runs the same
/// workloads on each policy. On the workload servers live on, a ping-pong where every read
/// carries a 1 s timeout that never fires, `Eager` and `OnIdle` re-program the timerfd once per
/// message and keep about 0.7 of the ping-pong rate without timeouts: the 2013 hrtimer
/// regression, reproduced. `Lazy` re-programs about once per second of run time (0 per message
/// to two decimals) and keeps about 0.9. On the other workloads (ping-pong without timers,
/// sleep precision, timer churn) the three are within noise of each other, because there the
/// earliest deadline only moves earlier or the device fires first. The price of `Lazy` is one
/// spurious wakeup per timeout period on a core that sleeps with a stale arming: one wakeup a
/// second against a syscall per message.
///
/// Slack does not change that: the device is armed for the end of the earliest window
/// (deadline plus slack), which moves with every message's new timeout, so `Eager` and
/// `OnIdle` re-program about once per message with or without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RearmPolicy {
    /// Re-program whenever the earliest deadline changes, on insert and on cancel: the Linux
    /// hrtimer behaviour of 2013 that cost pipe ping-pong 35%. Kept as the baseline to beat.
    Eager,
    /// Inserts that move the earliest deadline earlier, and cancels, only mark the queue; at the
    /// idle transition the device is re-programmed at most once, if the armed deadline differs
    /// from the earliest.
    OnIdle,
    /// Like `OnIdle`, but at idle the device is re-programmed only when the earliest deadline is
    /// earlier than the armed one. A stale, earlier arming fires once, is counted as spurious,
    /// and is replaced then (Linux's LAZY_REARM). One spurious wakeup per timeout period instead
    /// of one re-programming per message.
    #[default]
    Lazy,
}

/// How a [`TimerQueue`] is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// The re-arm policy.
    pub policy: RearmPolicy,
    /// The wheel's tick: deadlines round up to it. Default 1 µs. Deadlines are clamped to
    /// `u64::MAX` ticks (584 years at 1 ns, far more at the default).
    pub resolution: Duration,
    /// The most the device is programmed ahead of the armed instant, to make up for the time
    /// its wakeup takes to reach the core (see `Lead` and [`TimerQueue::device_woke`]).
    /// Default zero here: the device is programmed for the armed instant itself. (The runtime
    /// sets its own default.)
    pub lead_max: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            policy: RearmPolicy::default(),
            resolution: Duration::from_micros(1),
            lead_max: Duration::ZERO,
        }
    }
}

/// One core's timers: a `Wheel` of values `T`, the [`ClockDevice`] it programs, and the
/// [`RearmPolicy`] that decides when.
///
/// Times are `u64` nanoseconds on a clock of the caller's choosing (the runtime uses
/// nanoseconds since it started). A timer never fires before its deadline; it fires at most one
/// resolution plus its slack after it, counted from when [`advance`](Self::advance) is called.
///
/// # Examples
///
/// ```
/// use tickless_timer::{Config, FakeDevice, RearmPolicy, Slack, TimerQueue};
///
/// let config = Config { policy: RearmPolicy::OnIdle, ..Config::default() };
/// let mut q = TimerQueue::new(FakeDevice::default(), config);
/// let t = q.insert(5_000, Slack::None, "timeout");
/// q.on_idle(); // the core goes idle: the device is armed once
/// assert_eq!(q.device().armed, Some(5_000));
/// q.cancel(t); // the request finished: nothing is re-programmed while the core is busy
/// assert_eq!(q.device().reprograms(), 1);
/// ```
pub struct TimerQueue<T, D> {
    /// The timers, in ticks.
    wheel: Wheel<T>,
    /// The device the queue programs.
    device: D,
    /// When to program it.
    policy: RearmPolicy,
    /// Deadline <-> tick conversion.
    ticks: Ticks,
    /// The tick the queue needs the device to have fired by (the end of the earliest window,
    /// as of the last arming); `None` while disarmed. The device itself is programmed
    /// `armed_lead` earlier.
    armed: Option<u64>,
    /// How far ahead of `armed` the device was programmed, in nanoseconds: the lead as it was
    /// at that arming.
    armed_lead: u64,
    /// `armed` in nanoseconds less `armed_lead`: the instant the device is programmed for,
    /// kept so that the driver's every idle flush ([`on_idle`](Self::on_idle)) converts
    /// nothing; `None` while disarmed.
    programmed: Option<u64>,
    /// The wakeup latency, learned from [`device_woke`](Self::device_woke): how far ahead of
    /// the armed instant the next arming programs the device.
    lead: Lead,
    /// Whether arming uses the lead ([`set_leading`](Self::set_leading)).
    leading: bool,
    /// The last device expiry came ahead of the armed instant (by the lead) and found nothing
    /// due: the end of the earliest window has not come, and the driver has to wait it out
    /// awake ([`take_early`](Self::take_early)).
    early: bool,
    /// Something happened since the last flush that may make `armed` wrong for the policy.
    dirty: bool,
    /// A timer was inserted before the armed deadline and the device does not know yet: until
    /// the next idle flush, only reading the clock can tell whether it is due.
    unarmed: bool,
    /// Timers inserted while the device was armed no later than the end of their window, kept
    /// out of the wheel (`Wheel::insert_detached`): a timeout cancelled before the device
    /// fires never touches a wheel list. Placed in the wheel before anything reads it for
    /// expiry or arming (see [`attach_detached`]), and when more than half of
    /// [`DETACHED_MAX`] entries are still pending (the handles of cancelled ones are dropped
    /// when the list is full).
    ///
    /// [`attach_detached`]: Self::attach_detached
    detached: Vec<TimerHandle>,
    /// At least as many as the timers of `detached` still detached (cancels of detached timers
    /// count it down; a reset that places one does not): where a compaction can stop looking.
    detached_pending: usize,
    /// Young timers ([`insert_young`](Self::insert_young)): their entries' keys, until
    /// [`settle`](Self::settle) gives the young timers there their deadlines. Keys, not
    /// handles: every young timer's key is here (a key may be twice, or be a vacant entry's,
    /// once its timer is cancelled), and looking one up costs no generation check.
    young: Vec<u32>,
    /// How many of `young` are still young (cancels and resets of young timers count it down).
    young_pending: usize,
    /// The length of `young` at which stale handles are forgotten (doubled while more than
    /// half of them are live).
    young_cap: usize,
    /// Counters.
    stats: TimerStats,
}

/// A [`Slack`] resolved for one [`TimerQueue`] by [`TimerQueue::prepare`]: the lane of the
/// wheel its timers go to and that lane's slack in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreparedSlack {
    /// The lane.
    lane: Lane,
    /// The lane's slack in ticks; `None` for the deferrable lane.
    ticks: Option<u64>,
}

/// The most timers kept out of the wheel at once (see `TimerQueue::detached`).
const DETACHED_MAX: usize = 64;

/// The first length of the young list at which its stale keys are forgotten (see
/// `TimerQueue::young_cap`).
const YOUNG_CAP: usize = 64;

impl<T, D: ClockDevice> TimerQueue<T, D> {
    /// An empty queue over a disarmed device.
    pub fn new(device: D, config: Config) -> Self {
        TimerQueue {
            wheel: Wheel::new(),
            device,
            policy: config.policy,
            ticks: Ticks::new(config.resolution),
            armed: None,
            armed_lead: 0,
            programmed: None,
            lead: Lead::new(crate::slack::nanos(config.lead_max)),
            leading: true,
            early: false,
            dirty: false,
            unarmed: false,
            detached: Vec::new(),
            detached_pending: 0,
            young: Vec::new(),
            young_pending: 0,
            young_cap: YOUNG_CAP,
            stats: TimerStats::default(),
        }
    }

    /// The device, for inspection.
    pub fn device(&self) -> &D {
        &self.device
    }

    /// The device, for the driver that owns it.
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.device
    }

    /// The policy.
    pub fn policy(&self) -> RearmPolicy {
        self.policy
    }

    /// The resolution, in nanoseconds.
    pub fn resolution_ns(&self) -> u64 {
        self.ticks.ns
    }

    /// Counters; the remote-wake counters are the hand-over's and are zero here.
    pub fn stats(&self) -> TimerStats {
        self.stats
    }

    /// Timers pending.
    pub fn len(&self) -> usize {
        self.wheel.len()
    }

    /// Whether no timer is pending.
    pub fn is_empty(&self) -> bool {
        self.wheel.is_empty()
    }

    /// The instant the device was armed for, in nanoseconds: the end of the earliest window
    /// at the last arming. The device itself fires up to the lead before it
    /// ([`programmed`](Self::programmed)).
    pub fn armed(&self) -> Option<u64> {
        self.armed.map(|t| self.ticks.to_ns(t))
    }

    /// The instant the device is programmed to fire at, in nanoseconds: [`armed`](Self::armed)
    /// less the lead it was armed with.
    pub fn programmed(&self) -> Option<u64> {
        self.programmed
    }

    /// The wakeup lead learned so far, in nanoseconds: the next arming programs the device
    /// this far ahead of the end of the earliest window.
    pub fn lead(&self) -> u64 {
        self.lead.ns()
    }

    /// If the last expiry of the device came ahead of the armed instant and found nothing due
    /// (and nothing has taken that since), the lead that arming was programmed with; takes it.
    /// The driver then waits awake until [`next_expiration`](Self::next_expiration) if that is
    /// within this lead of now (else it arms the device again at its next idle, as after any
    /// expiry).
    pub fn take_early(&mut self) -> Option<u64> {
        std::mem::take(&mut self.early).then_some(self.armed_lead)
    }

    /// The instant the queue must be advanced by for no timer to be later than its slack
    /// allows: the smallest deadline plus slack of the non-deferrable timers (never later; see
    /// `Wheel::next_expiration`). The device is armed for it.
    pub fn next_expiration(&mut self) -> Option<u64> {
        self.attach_detached();
        self.wheel.next_expiration().map(|t| self.ticks.to_ns(t))
    }

    /// A bound on the earliest deadline of the pending timers (deferrable ones included), in
    /// nanoseconds: never later than it, and exact for the timers within 64 ticks (see
    /// `Wheel::next_deadline`). [`advance`](Self::advance) to it makes that timer due if
    /// the bound is exact. `None` when none is pending.
    pub fn next_deadline(&mut self) -> Option<u64> {
        self.attach_detached();
        self.wheel.next_deadline().map(|t| self.ticks.to_ns(t))
    }

    /// Adds a timer at `deadline` with `slack`; a deadline in the past fires at the next
    /// [`advance`](Self::advance).
    pub fn insert(&mut self, deadline: u64, slack: Slack, value: T) -> TimerHandle {
        let slack = self.prepare(slack);
        self.insert_prepared(deadline, slack, value)
    }

    /// A slack as this queue stores it: its lane of the wheel (made if it is the first timer
    /// of that slack) and that lane's slack in ticks. Inserting with it
    /// ([`insert_prepared`](Self::insert_prepared)) converts and looks up nothing, so a caller
    /// whose timers mostly share one slack (a server's request timeouts) prepares it once.
    /// Valid for this queue, for as long as it lives (lanes are never taken back).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless_timer::{Config, FakeDevice, Slack, TimerQueue};
    ///
    /// let mut q = TimerQueue::new(FakeDevice::default(), Config::default());
    /// let ms = q.prepare(Slack::Bounded(Duration::from_millis(1)));
    /// q.insert_prepared(5_000_000, ms, "a");
    /// q.insert_prepared(5_500_000, ms, "b");
    /// assert_eq!(q.next_expiration(), Some(6_000_000)); // a's latest instant
    /// ```
    pub fn prepare(&mut self, slack: Slack) -> PreparedSlack {
        match self.ticks.slack(slack) {
            Some(ticks) => {
                let (lane, ticks) = self.wheel.lane(ticks);
                PreparedSlack {
                    lane,
                    ticks: Some(ticks),
                }
            }
            None => PreparedSlack {
                lane: Lane::DEFERRABLE,
                ticks: None,
            },
        }
    }

    /// [`insert`](Self::insert) with a slack [`prepare`](Self::prepare)d by this queue.
    #[inline]
    pub fn insert_prepared(
        &mut self,
        deadline: u64,
        slack: PreparedSlack,
        value: T,
    ) -> TimerHandle {
        self.insert_filled(deadline, slack, Fill::Value(value))
    }

    /// [`insert_prepared`](Self::insert_prepared) of the value the last
    /// [`cancel_retaining`](Self::cancel_retaining) kept, if it is still kept and `reuse`
    /// accepts it; `None`, inserting nothing, otherwise. A caller whose timers' values are
    /// costly to make and to drop (a task's waker: a reference count up and down) and alike
    /// from one timer to the next (a task's timeouts) reuses the value in place.
    ///
    /// ```
    /// use tickless_timer::{Config, FakeDevice, Slack, TimerQueue};
    ///
    /// let mut q = TimerQueue::new(FakeDevice::default(), Config::default());
    /// let slack = q.prepare(Slack::None);
    /// let t = q.insert_prepared(5_000, slack, String::from("task 7"));
    /// assert_eq!(q.cancel_retaining(t), None); // kept: nothing released
    /// assert_eq!(q.insert_reusing(6_000, slack, |v| v == "task 8"), None);
    /// let t = q.insert_reusing(6_000, slack, |v| v == "task 7").unwrap();
    /// assert_eq!(q.cancel(t).as_deref(), Some("task 7"));
    /// ```
    #[inline]
    pub fn insert_reusing(
        &mut self,
        deadline: u64,
        slack: PreparedSlack,
        reuse: impl FnOnce(&T) -> bool,
    ) -> Option<TimerHandle> {
        if !self.wheel.retained().is_some_and(reuse) {
            return None;
        }
        Some(self.insert_filled(deadline, slack, Fill::Retained))
    }

    /// The insert of a value or of the retained one.
    #[inline(always)]
    fn insert_filled(&mut self, deadline: u64, slack: PreparedSlack, fill: Fill<T>) -> TimerHandle {
        self.stats.inserts += 1;
        let tick = self.ticks.tick(deadline);
        let PreparedSlack {
            lane,
            ticks: Some(slack),
        } = slack
        else {
            // Deferrable: it never arms the device.
            return self.wheel.store_in_lane(tick, slack.lane, fill);
        };
        // Already due: it waits for the next expiry, not for its slack.
        let due = tick <= self.wheel.elapsed();
        let latest = if due {
            tick
        } else {
            tick.saturating_add(slack)
        };
        if !due && self.armed.is_some_and(|a| a <= latest) {
            // The device fires first: the queue looks again then, and a timer cancelled
            // before that costs no wheel list (a request's timeout, typically).
            if self.detached.len() == DETACHED_MAX {
                self.compact_detached();
            }
            let handle = self.wheel.store_detached(tick, lane, fill);
            self.detached.push(handle);
            self.detached_pending += 1;
            return handle;
        }
        let handle = self.wheel.store_in_lane(tick, lane, fill);
        self.moved_earlier(latest);
        handle
    }

    /// Cancels a pending timer and returns its value; `None` (and nothing counted) for a handle
    /// that already fired or was cancelled.
    #[inline]
    pub fn cancel(&mut self, handle: TimerHandle) -> Option<T> {
        let (value, held) = self.wheel.take(handle)?;
        self.cancelled(held);
        Some(value)
    }

    /// Cancels a pending timer as [`cancel`](Self::cancel) does, but keeps its value, for the
    /// next [`insert_reusing`](Self::insert_reusing) to reuse in place. One value is kept at a
    /// time: returns the one kept before, released (and `None` if there was none, or for a
    /// stale handle, which changes nothing). [`take_retained`](Self::take_retained) releases
    /// the one kept.
    #[inline]
    pub fn cancel_retaining(&mut self, handle: TimerHandle) -> Option<T> {
        let (released, held) = self.wheel.take_retaining(handle)?;
        self.cancelled(held);
        released
    }

    /// The value kept by the last [`cancel_retaining`](Self::cancel_retaining), if it is still
    /// kept: no longer kept.
    pub fn take_retained(&mut self) -> Option<T> {
        self.wheel.take_retained()
    }

    /// A pending timer was cancelled: counts it, and lets the policy know. A young one was
    /// never inserted: it counts as neither.
    #[inline(always)]
    fn cancelled(&mut self, held: Held) {
        if held == Held::Young {
            self.young_pending -= 1;
            return;
        }
        self.stats.cancels += 1;
        if held == Held::Detached {
            // Never in the wheel: the arming was decided without it.
            self.stats.cancels_detached += 1;
            // At least one: this one was counted when it was detached (or found by the last
            // compaction), and nothing since has attached it.
            debug_assert!(self.detached_pending > 0);
            self.detached_pending = self.detached_pending.wrapping_sub(1);
            return;
        }
        match self.policy {
            RearmPolicy::Eager => self.sync_eagerly(),
            RearmPolicy::OnIdle => self.dirty = true,
            // A cancel can only move the earliest deadline later, which `Lazy` leaves be.
            RearmPolicy::Lazy => {}
        }
    }

    /// Moves a pending timer to a new deadline, keeping its handle. `false` for a stale handle.
    /// A reset is a cancel and an insert for the policies (and is counted as neither).
    pub fn reset(&mut self, handle: TimerHandle, deadline: u64, slack: Slack) -> bool {
        if self.wheel.is_young(handle) {
            // Given its deadline here: placed, as an insert.
            self.young_pending -= 1;
            self.stats.inserts += 1;
        }
        let reset = match self.ticks.window(deadline, slack) {
            (tick, Some(slack)) => self.wheel.reset_within(handle, tick, slack),
            // Kept in its lane: a bounded timer reset as deferrable still wakes the core by its
            // old slack (earlier than it had to, never early).
            (tick, None) => self.wheel.reset(handle, tick),
        };
        if reset {
            self.changed();
        }
        reset
    }

    /// The value of a pending timer, to update in place; `None` once it fired or was cancelled.
    pub fn get_mut(&mut self, handle: TimerHandle) -> Option<&mut T> {
        self.wheel.get_mut(handle)
    }

    /// Whether a timer is still pending.
    pub fn contains(&self, handle: TimerHandle) -> bool {
        self.wheel.contains(handle)
    }

    /// Makes every timer due at `now` ready for [`pop_expired`](Self::pop_expired). `now` is a
    /// clock reading: the young timers settle by it first (see [`settle`](Self::settle)).
    ///
    /// That takes every timer whose deadline has passed, also those whose slack would let them
    /// wait: the device may then be armed for one of them, which the next idle flush corrects
    /// (as the policy decides).
    pub fn advance(&mut self, now: u64) {
        if !self.young.is_empty() {
            self.settle(now);
        }
        self.attach_detached();
        if self.wheel.advance(self.ticks.now(now)) > 0 {
            self.dirty = true;
            // An early expiry's timer (or another) is due now: nothing is left to wait out.
            self.early = false;
        }
    }

    /// Takes one expired timer. Call it in a loop after [`advance`](Self::advance); timers may be
    /// inserted and cancelled between calls.
    pub fn pop_expired(&mut self) -> Option<(TimerHandle, T)> {
        self.pop_expired_at()
            .map(|(handle, _, value)| (handle, value))
    }

    /// [`pop_expired`](Self::pop_expired), with the timer's deadline in nanoseconds (rounded
    /// up to the resolution, as the wheel keeps it): what a driver measures how late the timer
    /// fired against.
    ///
    /// ```
    /// use tickless_timer::{Config, FakeDevice, Slack, TimerQueue};
    ///
    /// let mut q = TimerQueue::new(FakeDevice::default(), Config::default()); // 1 µs ticks
    /// q.insert(5_000_400, Slack::None, "a");
    /// q.advance(5_003_000);
    /// let (_, deadline, value) = q.pop_expired_at().unwrap();
    /// assert_eq!((deadline, value), (5_001_000, "a")); // 2 µs late, to the tick
    /// ```
    #[inline]
    pub fn pop_expired_at(&mut self) -> Option<(TimerHandle, u64, T)> {
        let (handle, tick, value) = self.wheel.pop_due_at()?;
        self.stats.fires += 1;
        Some((handle, self.ticks.to_ns(tick), value))
    }

    /// The device lost its programming behind the queue's back (the driver stopped using it
    /// for a while, say, or reset it): the queue forgets what it armed, and the next
    /// [`on_idle`](Self::on_idle) programs the device afresh for the earliest timer.
    pub fn device_lost(&mut self) {
        self.armed = None;
        self.programmed = None;
        self.early = false;
        self.dirty = true;
        self.unarmed = true;
    }

    /// The device fired, programmed by another thread for a timer it handed over (the
    /// inbox's remote arming): the queue forgets what it armed, as on
    /// [`device_lost`](Self::device_lost), and takes the expiry as early, since the handing
    /// thread programmed it the published lead ahead of that timer's deadline, as the queue
    /// would have: once the timer is taken from the inbox, [`take_early`](Self::take_early)
    /// lets the driver wait the rest out awake instead of arming the device for an instant
    /// already past and waking a second time. (A timer due by then is simply expired.)
    pub fn remote_fired(&mut self) {
        self.device_lost();
        if self.leading {
            self.early = true;
            self.armed_lead = self.lead.ns();
        }
    }

    /// Whether arming programs the device ahead of the armed instant by the lead (the
    /// default). A driver whose clock is paused turns it off: paused time has no wakeup
    /// latency to make up for. Takes effect at the next arming.
    pub fn set_leading(&mut self, on: bool) {
        self.leading = on;
    }

    /// Removes every pending timer and returns their values, in deadline order, and last the
    /// value a [`cancel_retaining`](Self::cancel_retaining) kept, if one is kept; counting
    /// nothing (for a driver that shuts down and must drop them in a context of its choosing).
    /// The device is left as it is.
    pub fn drain(&mut self) -> Vec<T> {
        // Young timers too, counted as nothing.
        let stats = self.stats;
        self.settle(0);
        self.stats = stats;
        self.attach_detached();
        let mut old = std::mem::take(&mut self.wheel);
        old.advance(u64::MAX);
        let retained = old.take_retained();
        std::iter::from_fn(|| old.pop_due().map(|(_, v)| v))
            .chain(retained)
            .collect()
    }

    /// Whether a timer may be due that the device will not announce: one inserted before the
    /// armed deadline since the last idle flush, or a deferrable one (it never arms the
    /// device). When `false`, the driver need not read the clock to expire timers: the device
    /// fires first.
    pub fn needs_clock(&self) -> bool {
        self.unarmed || self.wheel.has_deferrable()
    }

    /// Whether expired timers wait for [`pop_expired`](Self::pop_expired).
    pub fn has_expired(&self) -> bool {
        self.wheel.has_due()
    }

    /// The device signalled at `now` (a clock reading taken after the signal). If the instant
    /// it was programmed for has passed, the arming is spent and due timers become ready; if
    /// none is due, the wakeup is spurious, or, if it came ahead of the armed instant by the
    /// lead ([`programmed`](Self::programmed) <= `now` < [`armed`](Self::armed)) and a timer
    /// still needs the core by the armed instant, early: the driver learns so from
    /// [`take_early`](Self::take_early). Otherwise the signal is stale
    /// (the device was re-armed later, or disarmed, after it fired) and changes nothing. The
    /// queue alone knows what it armed: a device need not remember. Returns whether anything is
    /// due.
    pub fn device_fired(&mut self, now: u64) -> bool {
        let armed = match (self.armed, self.programmed) {
            (Some(armed), Some(programmed)) if programmed <= now => armed,
            _ => return false,
        };
        self.armed = None;
        self.programmed = None;
        self.dirty = true;
        // The arming is spent: until the next idle flush arms it again, nothing announces the
        // timers still pending, and a core that stays busy until then must read the clock to
        // expire them.
        self.unarmed = true;
        self.advance(now);
        let due = self.wheel.has_due();
        if !due {
            // Early if a timer still needs the core by the armed instant (then that instant
            // is still ahead: the timer would be due otherwise); else the timer it was armed
            // for is gone, and the wakeup is spurious, as without a lead.
            if self.wheel.next_expiration().is_some_and(|e| e <= armed) {
                self.early = true;
                self.stats.early += 1;
            } else {
                self.stats.spurious += 1;
            }
        }
        due
    }

    /// The device woke the core at `now`, from a wait that began before the instant the device
    /// was programmed for: as [`device_fired`](Self::device_fired), and the time from that
    /// instant to `now` teaches the lead. (A signal found by a core that did not wait for it,
    /// or waited only after it was due, says nothing of the wakeup's latency: give that to
    /// `device_fired`.)
    pub fn device_woke(&mut self, now: u64) -> bool {
        if let Some(programmed) = self.programmed() {
            if let Some(late) = now.checked_sub(programmed) {
                self.lead.observe(late);
            }
        }
        self.device_fired(now)
    }

    /// The core goes idle: apply the deferred re-arm, at most one device re-programming.
    /// Returns the instant the device is programmed for (when the core will wake by itself:
    /// [`programmed`](Self::programmed), the armed instant less the lead).
    pub fn on_idle(&mut self) -> Option<u64> {
        if self.dirty {
            self.dirty = false;
            // After the flush the device fires no later than the earliest timer, whatever the
            // policy.
            self.unarmed = false;
            self.attach_detached();
            let earliest = self.wheel.next_expiration();
            let reprogram = match self.policy {
                RearmPolicy::Eager | RearmPolicy::OnIdle => earliest != self.armed,
                RearmPolicy::Lazy => earliest.is_some_and(|e| self.armed.is_none_or(|a| e < a)),
            };
            if reprogram {
                self.program(earliest);
            }
        }
        self.programmed()
    }

    /// An insert at `tick`: may move the earliest deadline earlier. (Inlined: a call on every
    /// insert into the wheel cost a timer fire about 17 instructions, `timeout_cost.py`.)
    #[inline(always)]
    fn moved_earlier(&mut self, tick: u64) {
        if self.armed.is_some_and(|a| a <= tick) {
            return;
        }
        match self.policy {
            RearmPolicy::Eager => self.sync_eagerly(),
            RearmPolicy::OnIdle | RearmPolicy::Lazy => {
                self.dirty = true;
                self.unarmed = true;
            }
        }
    }

    /// A reset: may move the earliest deadline either way.
    fn changed(&mut self) {
        match self.policy {
            RearmPolicy::Eager => self.sync_eagerly(),
            RearmPolicy::OnIdle | RearmPolicy::Lazy => {
                self.dirty = true;
                self.unarmed = true;
            }
        }
    }

    /// Places the detached timers in the wheel: before an expiry or anything that decides the
    /// arming from the wheel (while they are detached, the armed instant is no later than any
    /// of their windows' ends, which is what lets them wait).
    fn attach_detached(&mut self) {
        if self.detached.is_empty() {
            return;
        }
        for handle in self.detached.drain(..) {
            // Stale (cancelled or fired since) or placed by a reset: nothing to do.
            self.wheel.attach(handle);
        }
        self.detached_pending = 0;
    }

    /// Makes room among the detached timers: forgets the stale handles (cancelled ones, mostly)
    /// and, if more than half are still pending, places them all.
    ///
    /// The pending ones are looked for from the latest back, and the search stops once as many
    /// as may be pending are found: a server's timeout is mostly cancelled before the next ones
    /// are set, so the few pending are the last few, and the stale ones before them are
    /// forgotten unread.
    fn compact_detached(&mut self) {
        let mut kept = self.detached.len();
        let mut found = 0;
        let mut i = self.detached.len();
        while i > 0 && found < self.detached_pending {
            i -= 1;
            let handle = self.detached[i];
            if self.wheel.is_detached(handle) {
                kept -= 1;
                self.detached[kept] = handle;
                found += 1;
            }
        }
        self.detached.drain(..kept);
        self.detached_pending = found;
        if self.detached.len() > DETACHED_MAX / 2 {
            self.attach_detached();
        }
    }

    fn sync_eagerly(&mut self) {
        self.attach_detached();
        let earliest = self.wheel.next_expiration();
        if earliest != self.armed {
            self.program(earliest);
        }
    }

    fn program(&mut self, tick: Option<u64>) {
        self.stats.rearms += 1;
        self.armed = tick;
        self.armed_lead = if self.leading { self.lead.ns() } else { 0 };
        self.programmed = tick.map(|t| self.ticks.to_ns(t).saturating_sub(self.armed_lead));
        match self.programmed {
            Some(at) => self.device.arm(at),
            None => self.device.disarm(),
        }
    }
}
