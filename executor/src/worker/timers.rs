//! The core's timers: its wheel and timerfd (a `TimerQueue`), its clock, and the small set of
//! operations the time types and the loop use.
//!
//! # Invariants
//!
//! - Deadlines are nanoseconds on the core's clock (see [`Clock`]). A deadline given (an
//!   instant) is placed at registration; a sleep made for a duration is registered *young*
//!   (`TimerQueue::insert_young`) and takes its deadline from the core's next clock reading,
//!   which is later than its creation (never early): one the loop takes anyway, else one taken
//!   before the core parks or asks for its next expiration, else the expiry's own after
//!   [`SETTLE_TURNS`] turns. Expiry uses `last_now`, the loop turn's one reading.
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

use tickless_timer::{Config, PreparedSlack, Slack, TimerHandle, TimerQueue, TimerStats};

use crate::catch::drop_caught;
use crate::worker::clock::Clock;
use crate::worker::config::DefaultSlack;
use crate::worker::device::{ClockDevice, Device};
use crate::worker::shared::{Due, Shared};

/// A sleep's span when it is not known (`sleep_until`, `Interval`). Zero, so that "long
/// enough for the long default slack" is one comparison; a sleep made for zero is treated the
/// same (its time left is estimated from the clock, and is zero or nearly).
pub(crate) const NO_SPAN: u64 = 0;

/// Timers fired in one batch before the loop turns back to tasks and I/O.
pub(crate) const TIMER_BUDGET: usize = 1024;

/// [`Timers::hint`]: the clock is paused.
const PAUSED: u8 = 1;
/// [`Timers::hint`]: young timers may wait for a reading.
const YOUNG: u8 = 2;

/// Turns of the loop a young timer waits for a clock reading the loop takes anyway (an
/// expiry's, the device's, the idle path's) before the turn's expiry reads the clock for it.
pub(crate) const SETTLE_TURNS: u8 = 16;

/// The core's timers.
pub(crate) struct Timers {
    /// The wheel, the re-arm policy and the timerfd.
    queue: RefCell<TimerQueue<Due, Device>>,
    /// Real or paused time; shared with the device, which converts deadlines with it.
    clock: Rc<Clock>,
    /// `now` as of the last expiry: deadlines at or before it are already due.
    last_now: Cell<u64>,
    /// Whether `last_now` is recent enough to tell how long a new timer has left to run, for a
    /// proportional default slack: 2 when it was just read, one less at the end of each expiry
    /// pass (so it serves the tasks the reading woke, in the next turn), 0 once the core idles.
    fresh: Cell<u8>,
    /// Slack of timers that give none.
    default_slack: DefaultSlack,
    /// The time left from which `default_slack` is the same for every timer
    /// ([`DefaultSlack::constant_from`]).
    long_from: u64,
    /// That slack, prepared for the queue.
    long_slack: PreparedSlack,
    /// Whether a registration looks for the waker of a sleep cancelled here, kept for it to
    /// reuse: set by [`cancel_sleep`](Self::cancel_sleep), cleared by a registration that found
    /// none it could reuse. The others clone their waker and borrow the queue once, as if
    /// nothing were ever kept (a timer fire's path, a sleep of another task).
    kept: Cell<bool>,
    /// Turns ended (expiries) since young timers began to wait for a reading (see
    /// [`SETTLE_TURNS`]).
    young_turns: Cell<u8>,
    /// What makes an expiry look beyond the queue, as bits: [`PAUSED`] (the clock is paused:
    /// reads are free, every expiry reads) and [`YOUNG`] (a young timer was registered since
    /// the last settle; it may have been cancelled since). One load tells a turn that neither
    /// holds.
    hint: Cell<u8>,
    /// What the device is (fixed at creation; the loop asks at every poll).
    device: ClockDevice,
    /// The core's shared half, whose timer-lateness histogram each fire counts in.
    shared: Arc<Shared>,
}

impl Timers {
    /// The timers of a core, over its timerfd (`None`: its epoll wait's timeout).
    pub(crate) fn new(
        timer: Option<tickless_io::internal::TimerFd>,
        clock: Clock,
        config: Config,
        default_slack: DefaultSlack,
        shared: Arc<Shared>,
    ) -> Timers {
        let paused = clock.is_paused();
        let clock = Rc::new(clock);
        let device = Device::new(timer, clock.clone(), shared.clone());
        let kind = device.kind();
        let mut queue = TimerQueue::new(device, config);
        let long_from = default_slack.constant_from();
        let long_slack = queue.prepare(default_slack.resolve(long_from));
        queue.device().publish_lead(queue.lead());
        Timers {
            device: kind,
            queue: RefCell::new(queue),
            clock,
            last_now: Cell::new(0),
            fresh: Cell::new(0),
            default_slack,
            long_from,
            long_slack,
            kept: Cell::new(false),
            young_turns: Cell::new(0),
            hint: Cell::new(if paused { PAUSED } else { 0 }),
            shared,
        }
    }

    /// The core's clock.
    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// What the core sleeps on.
    pub(crate) fn device(&self) -> ClockDevice {
        self.device
    }

    // --- What the time types use. ---

    /// Registers a sleep's waker for `ns` (an instant) with `slack` (the core's default when
    /// `None`; `span`, if known (not [`NO_SPAN`]), is how long the sleep was made for, in
    /// nanoseconds, which a proportional default uses instead of a clock read). `None` if the
    /// deadline is already due by the core's last reading: the sleep completes now, and nothing
    /// is registered.
    /// Always inlined: as a call (`poll_sleep` has the young path beside it) it cost a timer
    /// fire about 30 instructions (`timeout_cost.py`'s churn).
    #[inline(always)]
    pub(crate) fn register(
        &self,
        ns: u64,
        slack: Option<Slack>,
        span: u64,
        waker: &Waker,
    ) -> Option<TimerHandle> {
        if ns <= self.last_now.get() {
            return None;
        }
        if self.kept.get() {
            let mut queue = self.queue.borrow_mut();
            let slack = self.prepared(&mut queue, ns, slack, span);
            // The waker of the last sleep cancelled here, kept in its entry, if it wakes what
            // `waker` wakes (a task cancels its request's timeout and sets the next one in the
            // same poll): reused in place, neither cloned nor dropped. (`will_wake` compares
            // pointers: no user code under the borrow.)
            let reused = queue.insert_reusing(
                ns,
                slack,
                |due| matches!(due, Due::Wake(kept) if kept.will_wake(waker)),
            );
            if reused.is_some() {
                return reused;
            }
            // None kept, or not this task's: look no more until a sleep is cancelled again.
            self.kept.set(false);
        }
        // Before the queue's borrow: a waker's clone is user code.
        let value = Due::Wake(waker.clone());
        let mut queue = self.queue.borrow_mut();
        let slack = self.prepared(&mut queue, ns, slack, span);
        Some(queue.insert_prepared(ns, slack, value))
    }

    /// Registers a young sleep's waker: one made for `span` ns (zero too: due at that reading)
    /// with `slack`, whose deadline is `span` after a clock reading the core takes later (see
    /// [`settle`](Self::settle)): none now. A deferrable one reads the clock now instead (it
    /// never arms the device: nothing would be sure to settle it).
    #[inline]
    pub(crate) fn register_young(
        &self,
        span: u64,
        slack: Option<Slack>,
        waker: &Waker,
    ) -> Option<TimerHandle> {
        if slack == Some(Slack::Unbounded) {
            return self.register(self.clock.now().saturating_add(span), slack, span, waker);
        }
        self.hint.set(self.hint.get() | YOUNG);
        if self.kept.get() {
            let mut queue = self.queue.borrow_mut();
            let slack = self.young_slack(&mut queue, slack, span);
            // As in `register`: the kept waker, if it wakes what `waker` wakes.
            let reused = queue.insert_young_reusing(
                span,
                slack,
                |due| matches!(due, Due::Wake(kept) if kept.will_wake(waker)),
            );
            if reused.is_some() {
                return reused;
            }
            self.kept.set(false);
        }
        let value = Due::Wake(waker.clone());
        let mut queue = self.queue.borrow_mut();
        let slack = self.young_slack(&mut queue, slack, span);
        Some(queue.insert_young(span, slack, value))
    }

    /// A young sleep's slack, prepared: its default from its span, which it always knows.
    #[inline(always)]
    fn young_slack(
        &self,
        queue: &mut TimerQueue<Due, Device>,
        slack: Option<Slack>,
        span: u64,
    ) -> PreparedSlack {
        match slack {
            None if span >= self.long_from => self.long_slack,
            None => queue.prepare(self.default_slack.resolve(span)),
            Some(slack) => queue.prepare(slack),
        }
    }

    /// Gives the young timers their deadlines from `now`, a clock reading taken after each was
    /// made (never early: see `TimerQueue::insert_young`). One load when there are none.
    #[inline(always)]
    pub(crate) fn settle(&self, now: u64) {
        if self.hint.get() & YOUNG != 0 {
            self.settle_young(now);
        }
    }

    #[inline(never)]
    fn settle_young(&self, now: u64) {
        self.queue.borrow_mut().settle(now);
        self.settled();
    }

    /// The young timers were settled.
    #[inline(always)]
    fn settled(&self) {
        self.hint.set(self.hint.get() & !YOUNG);
        self.young_turns.set(0);
    }

    /// Settles the young timers, if any, by a clock reading taken now.
    #[inline]
    pub(crate) fn settle_now(&self) {
        if self.hint.get() & YOUNG != 0 {
            self.settle_young(self.clock.now());
        }
    }

    /// A registered sleep's deadline, if it has one (not young); `None` once it fired.
    pub(crate) fn settled_deadline(&self, handle: TimerHandle) -> Option<u64> {
        self.queue.borrow().deadline_of(handle)
    }

    /// A registered sleep's deadline; `None` once it fired. A young one is settled first (a
    /// clock read).
    pub(crate) fn deadline_of(&self, handle: TimerHandle) -> Option<u64> {
        self.settle_now();
        self.queue.borrow().deadline_of(handle)
    }

    /// A sleep's slack (`None`: the default, for a sleep due at `ns` made for `span`),
    /// prepared for the queue.
    #[inline(always)]
    fn prepared(
        &self,
        queue: &mut TimerQueue<Due, Device>,
        ns: u64,
        slack: Option<Slack>,
        span: u64,
    ) -> PreparedSlack {
        match slack {
            // A long timer's default slack (a request's timeout): prepared already. (`NO_SPAN`
            // is below every `long_from` but 0, where every timer gets that slack anyway.)
            None if span >= self.long_from => self.long_slack,
            None => self.default_slack_of(queue, ns, span),
            Some(slack) => queue.prepare(slack),
        }
    }

    /// Cancels a sleep of this core, keeping its waker in its entry for the next registration
    /// (see [`register`](Self::register)); the waker kept before, which it replaces, is dropped,
    /// under a panic guard, after the queue's borrow. Nothing if it already fired, or while the
    /// queue is borrowed (the core's own shutdown is taking every timer: nothing to cancel).
    #[inline(always)]
    pub(crate) fn cancel_sleep(&self, handle: TimerHandle) {
        let Ok(mut queue) = self.queue.try_borrow_mut() else {
            return;
        };
        let released = queue.cancel_retaining(handle);
        drop(queue);
        self.kept.set(true);
        if let Some(old) = released {
            drop_caught(old);
        }
    }

    /// The default slack of a timer due at `ns` made for `span` ns ([`NO_SPAN`]: unknown),
    /// prepared for the queue.
    ///
    /// A proportional default needs the time left: `span` when the caller knows it (`sleep`,
    /// `timeout`), else the deadline less the loop's last reading while that is recent (the
    /// tasks a timer wakeup runs), else one clock read. The last reading is never ahead of
    /// now, so the estimate is never short: the slack is at most the share of the time left
    /// plus the share of one loop turn. From [`DefaultSlack::constant_from`] on, the slack is
    /// the same for every length: prepared once, with the queue, and reused.
    fn default_slack_of(
        &self,
        queue: &mut TimerQueue<Due, Device>,
        ns: u64,
        span: u64,
    ) -> PreparedSlack {
        let policy = self.default_slack;
        let remaining = if span != NO_SPAN {
            span
        } else {
            self.time_left(ns)
        };
        if remaining < self.long_from {
            return queue.prepare(policy.resolve(remaining));
        }
        self.long_slack
    }

    /// How long a timer due at `ns` has left, as far as the default slack needs to know: the
    /// deadline less the loop's last reading while that is recent, else less one clock read
    /// (paused time reads for free, and exactly); 0, reading nothing, when the default is the
    /// same for every length. Always inlined: as a call it cost a `sleep_until` about 15
    /// instructions (`churn_paused` under callgrind).
    #[inline(always)]
    fn time_left(&self, ns: u64) -> u64 {
        if self.long_from == 0 {
            0
        } else if self.fresh.get() > 0 && !self.clock.is_paused() {
            ns.saturating_sub(self.last_now.get())
        } else {
            ns.saturating_sub(self.clock.now())
        }
    }

    /// Whether a registered sleep has fired; if not, makes sure `waker` is the one woken.
    pub(crate) fn poll_registered(&self, handle: TimerHandle, waker: &Waker) -> bool {
        match self.queue.borrow_mut().get_mut(handle) {
            // Fired: the wheel handed back our waker and forgot the handle.
            None => true,
            Some(Due::Wake(w)) => {
                if !w.will_wake(waker) {
                    w.clone_from(waker);
                }
                false
            }
            Some(_) => unreachable!("a Sleep's handle names a task, not a waker"),
        }
    }

    /// Moves a registered sleep to `deadline`, keeping its entry; `false` if it already fired.
    pub(crate) fn reset(&self, handle: TimerHandle, ns: u64, slack: Option<Slack>) -> bool {
        let slack = slack.unwrap_or_else(|| self.default_slack.resolve(self.time_left(ns)));
        self.queue.borrow_mut().reset(handle, ns, slack)
    }

    /// Cancels a timer of this core and returns its value, to drop outside the borrow. `None`
    /// if it already fired, or while the queue is borrowed (the core's own shutdown is taking
    /// every timer: nothing to cancel).
    #[inline]
    pub(crate) fn cancel(&self, handle: TimerHandle) -> Option<Due> {
        self.queue.try_borrow_mut().ok()?.cancel(handle)
    }

    /// Pauses the core's clock (`time::pause`). `false` if it was paused already.
    pub(crate) fn pause(&self) -> bool {
        // By the running clock, before it stops.
        self.settle_now();
        let paused = self.clock.pause();
        if paused {
            self.hint.set(self.hint.get() | PAUSED);
            // Paused time never arms the timerfd: what the queue armed is no longer what
            // the core wakes by (a real arming left behind fires once, and is ignored). Nor
            // does it have a wakeup latency to lead by.
            let mut queue = self.queue.borrow_mut();
            queue.device_lost();
            queue.set_leading(false);
            queue.device().allow_remote();
        }
        paused
    }

    /// Resumes the core's clock (`time::resume`). `false` if it was not paused.
    pub(crate) fn resume(&self) -> bool {
        self.settle_now();
        let resumed = self.clock.resume();
        if resumed {
            self.hint.set(self.hint.get() & !PAUSED);
            // The timerfd knows nothing of what was armed while paused: arm it afresh.
            let mut queue = self.queue.borrow_mut();
            queue.device_lost();
            queue.set_leading(true);
            queue.device().allow_remote();
        }
        resumed
    }

    // --- What the loop uses. ---

    /// Inserts a timer handed over by another thread. A `spawn_at` task learns its handle.
    pub(crate) fn insert(&self, deadline: u64, slack: Slack, value: Due) {
        let deferred = match &value {
            Due::ScheduleAt(_, d) => Some(d.clone()),
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
    pub(crate) fn expire(&self, fired: &mut Vec<Due>) -> bool {
        let more = self.expire_batch(fired);
        self.fresh.set(self.fresh.get().saturating_sub(1));
        more
    }

    fn expire_batch(&self, fired: &mut Vec<Due>) -> bool {
        let mut queue = self.queue.borrow_mut();
        let hint = self.hint.get();
        // (Tested first: most turns hold neither, and pay one test for both.)
        if hint != 0 || queue.needs_clock() {
            if queue.needs_clock() || hint & PAUSED != 0 {
                if queue.is_empty() {
                    return false;
                }
                let now = self.clock.now();
                self.last_now.set(now);
                self.fresh.set(2);
                // Settles the young timers first.
                queue.advance(now);
                self.settled();
            } else {
                self.young_turn(&mut queue);
            }
        }
        if !queue.has_expired() {
            return false;
        }
        // The reading the timers became due by (here, or the device's event): each fire's
        // lateness is measured from it.
        let now = self.last_now.get();
        let lateness = &self.shared.lateness;
        while fired.len() < TIMER_BUDGET {
            let Some((_, deadline, value)) = queue.pop_expired_at() else {
                return false;
            };
            lateness.record(now.saturating_sub(deadline));
            match value {
                Due::ScheduleAt(runnable, deferred) => {
                    deferred.started();
                    fired.push(Due::Schedule(runnable));
                }
                value => fired.push(value),
            }
        }
        queue.has_expired()
    }

    /// A turn ends with young timers and no reading of the expiry's: they wait for a reading
    /// the loop takes anyway (the idle path's, the device's), [`SETTLE_TURNS`] turns at most,
    /// then this reads the clock for them. Only settled: placed as inserts now would be
    /// (detached while the device is armed earlier), and expired by the next reading, as any
    /// insert.
    fn young_turn(&self, queue: &mut TimerQueue<Due, Device>) {
        if !queue.has_young() {
            // All cancelled while young (requests' timeouts, answered): nothing to read the
            // clock for; the settle only forgets their keys.
            queue.settle(0);
            self.settled();
            return;
        }
        let turns = self.young_turns.get() + 1;
        if turns >= SETTLE_TURNS {
            queue.settle(self.clock.now());
            self.settled();
        } else {
            self.young_turns.set(turns);
        }
    }

    /// The clock event device may have fired (an event of the timerfd; with the epoll device,
    /// any poll): if something is armed, one clock read tells the queue whether the instant
    /// the device was programmed for has passed (or the event is stale). `woken`: the core was
    /// parked since before that instant, so the time from it to now is the wakeup's latency,
    /// which teaches the queue its lead.
    pub(crate) fn device_event(&self, woken: bool) {
        let mut queue = self.queue.borrow_mut();
        if queue.device().touched() {
            // Another thread programmed the timerfd for a timer it handed over (in the inbox),
            // the lead ahead of its deadline: what the queue armed is not what fired, and the
            // core waits the rest of the lead out awake once it has taken the timer (one
            // wakeup per handed timer, not a second for an arming already past).
            queue.remote_fired();
            return;
        }
        if queue.armed().is_some() {
            let now = self.clock.now();
            self.last_now.set(self.last_now.get().max(now));
            self.fresh.set(2);
            // A reading taken anyway: the young timers settle by it.
            if self.hint.get() & YOUNG != 0 {
                queue.settle(now);
                self.settled();
            }
            if woken {
                queue.device_woke(now);
                // The lead may have moved: a thread that programs the timerfd for a timer it
                // hands over leads by it too.
                queue.device().publish_lead(queue.lead());
            } else {
                queue.device_fired(now);
            }
        }
    }

    /// If the device's last expiry came ahead of the armed instant, by the lead, with nothing
    /// due yet, that arming's lead (taken by the asking): the core waits out the rest awake.
    pub(crate) fn take_early(&self) -> Option<u64> {
        self.queue.borrow_mut().take_early()
    }

    /// The wakeup lead the core has learned, in nanoseconds.
    pub(crate) fn lead(&self) -> u64 {
        self.queue.borrow().lead()
    }

    /// The loop's last clock reading (never ahead of now).
    pub(crate) fn last_now(&self) -> u64 {
        self.last_now.get()
    }

    /// The idle flush: applies the deferred re-arm (at most one `timerfd_settime`) and returns
    /// the instant the device is programmed for (the armed one less the lead).
    pub(crate) fn on_idle(&self) -> Option<u64> {
        // The core is about to wait: young timers must be in the wheel for the device to be
        // armed for them.
        self.settle_now();
        self.arm_before_spin()
    }

    /// The idle flush before a spin ([`on_idle`](Self::on_idle) but for the young timers,
    /// which keep waiting for a reading: the spin's own, if it does not catch work at once).
    pub(crate) fn arm_before_spin(&self) -> Option<u64> {
        // Whatever wakes the core, `last_now` will be old by then.
        self.fresh.set(0);
        self.queue.borrow_mut().on_idle()
    }

    /// The earliest instant a non-deferrable timer may fire.
    pub(crate) fn next_expiration(&self) -> Option<u64> {
        self.settle_now();
        self.queue.borrow_mut().next_expiration()
    }

    /// A bound on the earliest deadline, never later than it (exact for a timer this close).
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.settle_now();
        self.queue.borrow_mut().next_deadline()
    }

    /// Whether timers are due and wait to be expired.
    pub(crate) fn has_expired(&self) -> bool {
        self.queue.borrow().has_expired()
    }

    /// Makes every timer due at `now` (a reading just taken) ready to expire.
    pub(crate) fn advance(&self, now: u64) {
        self.last_now.set(now);
        self.fresh.set(2);
        // Settles the young timers too.
        self.queue.borrow_mut().advance(now);
        self.settled();
    }

    /// Takes every pending timer out, for the core's shutdown (to drop them in its context).
    pub(crate) fn take_all(&self) -> Vec<Due> {
        // With the waker a cancelled sleep's entry kept.
        self.queue.borrow_mut().drain()
    }

    /// The queue's counters.
    pub(crate) fn stats(&self) -> TimerStats {
        self.queue.borrow().stats()
    }

    /// Timers pending (due ones included).
    pub(crate) fn pending(&self) -> usize {
        self.queue.borrow().len()
    }
}
