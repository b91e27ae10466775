//! Young timers: made with a span, given their deadline by the driver's next clock reading
//! ([`TimerQueue::insert_young`], [`TimerQueue::settle`]).

use super::{PreparedSlack, TimerQueue, DETACHED_MAX};
use crate::device::ClockDevice;
use crate::slab::{Fill, TimerHandle};

impl<T, D: ClockDevice> TimerQueue<T, D> {
    /// Adds a young timer: one due `span` nanoseconds after an instant the caller learns only
    /// later, at the next [`settle`](Self::settle) (or [`advance`](Self::advance)), whose
    /// reading is that instant. Until then it is pending (its handle works for
    /// [`cancel`](Self::cancel), [`get_mut`](Self::get_mut), [`reset`](Self::reset)), but in no
    /// list: neither [`next_expiration`](Self::next_expiration) nor the arming sees it, and
    /// it is not counted as inserted. A young timer cancelled before it settles (a request's
    /// timeout answered at once) costs no clock reading and no wheel list.
    ///
    /// For a driver that reads its clock once for all the timers made since its last reading
    /// (a loop turn's), rather than once for each: a timer made before a reading and settled
    /// by it is never early, and is late by at most the time from its creation to that reading.
    /// The driver must settle before it asks for the next expiration or lets the device arm
    /// (before its core sleeps), or young timers may be late without bound.
    ///
    /// ```
    /// use tickless_timer::{Config, FakeDevice, Slack, TimerQueue};
    ///
    /// let mut q = TimerQueue::new(FakeDevice::default(), Config::default());
    /// let slack = q.prepare(Slack::None);
    /// let answered = q.insert_young(5_000, slack, "answered at once");
    /// let kept = q.insert_young(5_000, slack, "kept");
    /// assert_eq!(q.cancel(answered), Some("answered at once"));
    /// assert_eq!(q.next_expiration(), None); // young: not in the wheel yet
    /// q.settle(1_000); // a clock reading taken after both were made
    /// assert_eq!(q.deadline_of(kept), Some(6_000));
    /// assert_eq!(q.stats().inserts, 1); // the cancelled one never reached the wheel
    /// ```
    ///
    /// # Panics
    ///
    /// In debug builds, for a deferrable slack (a deferrable timer never arms the device, so
    /// nothing would be sure to settle it).
    #[inline]
    pub fn insert_young(&mut self, span: u64, slack: PreparedSlack, value: T) -> TimerHandle {
        self.store_young(span, slack, Fill::Value(value))
    }

    /// [`insert_young`](Self::insert_young) of the value the last
    /// [`cancel_retaining`](Self::cancel_retaining) kept, if `reuse` accepts it (see
    /// [`insert_reusing`](Self::insert_reusing)); `None`, inserting nothing, otherwise.
    #[inline]
    pub fn insert_young_reusing(
        &mut self,
        span: u64,
        slack: PreparedSlack,
        reuse: impl FnOnce(&T) -> bool,
    ) -> Option<TimerHandle> {
        if !self.wheel.retained().is_some_and(reuse) {
            return None;
        }
        Some(self.store_young(span, slack, Fill::Retained))
    }

    #[inline(always)]
    fn store_young(&mut self, span: u64, slack: PreparedSlack, fill: Fill<T>) -> TimerHandle {
        if self.young.len() == self.young_cap {
            self.compact_young();
        }
        let (key, handle) = self.wheel.store_young(span, slack.lane, fill);
        self.young.push(key);
        self.young_pending += 1;
        handle
    }

    /// Whether young timers wait to be [`settle`](Self::settle)d.
    #[inline]
    pub fn has_young(&self) -> bool {
        self.young_pending > 0
    }

    /// Gives every young timer its deadline, `now` plus its span (a clock reading taken after
    /// each was made: then none is early), and places it as an insert at that deadline
    /// would. Nothing, and no reading needed, when none is young.
    pub fn settle(&mut self, now: u64) {
        if self.young_pending == 0 {
            self.young.clear();
            return;
        }
        // (Placing touches the detached list, never this one.)
        for i in 0..self.young.len() {
            let key = self.young[i];
            if let Some((span, slack)) = self.wheel.young_at(key) {
                self.settle_one(key, now.saturating_add(span), slack);
            }
        }
        self.young.clear();
        self.young_pending = 0;
    }

    /// Places the young timer at `key` at `deadline`, with its lane's `slack` in ticks: as
    /// an insert places a new one (`insert_filled`).
    fn settle_one(&mut self, key: u32, deadline: u64, slack: u64) {
        self.stats.inserts += 1;
        let tick = self.ticks.tick(deadline);
        let due = tick <= self.wheel.elapsed();
        let latest = if due {
            tick
        } else {
            tick.saturating_add(slack)
        };
        if !due && self.armed.is_some_and(|a| a <= latest) {
            if self.detached.len() == DETACHED_MAX {
                self.compact_detached();
            }
            let handle = self.wheel.place_young(key, tick, true);
            self.detached.push(handle);
            self.detached_pending += 1;
            return;
        }
        self.wheel.place_young(key, tick, false);
        self.moved_earlier(latest);
    }

    /// Forgets the stale keys of the young list (cancelled timers', mostly); doubles the
    /// length at which it looks again while more than half are live.
    #[cold]
    fn compact_young(&mut self) {
        let wheel = &self.wheel;
        self.young.retain(|&key| wheel.young_at(key).is_some());
        self.young.dedup();
        if self.young.len() > self.young_cap / 2 {
            self.young_cap *= 2;
        }
    }

    /// The deadline of a pending timer, as the wheel keeps it (rounded up to the resolution);
    /// `None` for a young one (see [`insert_young`](Self::insert_young)) or a stale handle.
    pub fn deadline_of(&self, handle: TimerHandle) -> Option<u64> {
        self.wheel.tick_of(handle).map(|t| self.ticks.to_ns(t))
    }
}
