//! The hierarchical timing wheel, in integer ticks.
//!
//! # Implementation
//!
//! Eleven levels of 64 slots cover the whole `u64` tick range (11 x 6 = 66 bits), so no deadline
//! ever wraps around a level. A timer sits at the level of the highest 6-bit group in which its
//! tick differs from the wheel's `elapsed` tick, in the slot given by that group of its tick.
//! Each level keeps a 64-bit occupancy bitmap, so finding the next occupied slot is a shift and a
//! `trailing_zeros`, never a scan of slots.
//!
//! Each slot also keeps a *bound*: no timer in the slot expires before it, so arming a device at
//! it is never late. It is exact, except after the earliest timer of a slot holding more than
//! eight was removed: recomputing it then would cost a scan of an arbitrarily large slot, so it
//! stays early. A stale bound costs at most one early wakeup, at which the slot is cascaded into
//! finer levels, where bounds are exact again. Every timer cascades at most once per level.
//!
//! `advance(now)` repeatedly takes the slot with the smallest bound `t <= now`, moves `elapsed`
//! to `t`, and empties the slot: timers whose tick is `t` become due, the others are placed
//! again relative to the new `elapsed`, always at a lower level. Bounds taken are
//! non-decreasing, so timers become due in tick order.
//!
//! # Lanes: timers with slack
//!
//! A timer's tick is its deadline; it may fire any time from there to its tick plus its
//! *slack*. Timers live in lanes, one per slack value (each lane its own levels and bitmaps,
//! allocated when first used): the earliest instant the wheel *must* be advanced by is then the
//! smallest of each lane's earliest tick plus that lane's slack, found in O(lanes x levels).
//! Arming a device there and, when it fires, expiring every timer whose tick has passed is
//! the greedy answer to "fewest wakeups with no timer later than its slack allows" (stab each
//! window at its latest instant, earliest-ending first): optimal for one slack, and each
//! wakeup takes every timer of every lane that is due. Lane 0 has no slack; lane 1 is the
//! deferrable lane, whose timers never make the wheel need advancing at all.
//!
//! # Files
//!
//! - `level.rs`: the storage of a lane's levels, and where a node lives (`Place`);
//! - `lists.rs`: linking nodes into slots and the due list and out of them;
//! - `expiry.rs`: what must fire by when, advancing, popping what is due;
//! - this file: the wheel, its lanes, and inserting, removing and resetting timers.

mod expiry;
mod level;
mod lists;

use crate::slab::{Fill, Slab, TimerHandle};
pub use level::Lane;
pub(crate) use level::Place;
use level::{new_lane, Level, List};

/// Number of levels: enough for every `u64` tick.
pub const LEVELS: usize = 11;
/// Slots per level.
const SLOTS: usize = 64;
/// Bits of a tick per level.
const BITS: u32 = 6;
/// The lane of timers without slack.
const EXACT: u8 = 0;
/// The lane of deferrable timers: they never arm the device.
const DEFERRABLE: u8 = 1;
/// At most this many lanes: a timer whose slack has no lane of its own once they are all in
/// use goes to the lane with the largest slack below its own (lane 0 at worst): earlier, never
/// late. `Place` packs up to 62.
pub const MAX_LANES: usize = 16;
/// A slot of at most this many timers gets an exact bound back when its earliest is removed.
const RESCAN_LIMIT: usize = 8;

/// A hierarchical timing wheel holding values of type `T`, in integer ticks.
///
/// Insert, remove and reset are O(1) (O(lanes) for a slack other than the last one's);
/// [`next_expiration`](Self::next_expiration) is O(lanes x levels), over those in use.
/// Ticks are whatever unit the caller chooses; [`TimerQueue`](crate::TimerQueue) uses the
/// configured resolution. The wheel needs no `unsafe`.
///
/// # Examples
///
/// ```
/// use tickless_timer::internal::Wheel;
///
/// let mut wheel = Wheel::new();
/// let a = wheel.insert(300, false, "a");
/// wheel.insert(100, false, "b");
/// assert_eq!(wheel.next_expiration(), Some(100));
/// assert_eq!(wheel.remove(a), Some("a"));
/// wheel.advance(1_000);
/// assert_eq!(wheel.pop_due().map(|(_, v)| v), Some("b"));
/// assert_eq!(wheel.pop_due(), None);
/// ```
pub struct Wheel<T> {
    /// Every timer's node.
    slab: Slab<T>,
    /// `lanes[lane][level]`: lane 0 without slack, lane 1 deferrable, the others one slack
    /// each (see the module docs).
    levels: Vec<Level>,
    /// Each lane's slack in ticks (`u64::MAX` for the deferrable lane).
    slacks: [u64; MAX_LANES],
    /// Lanes in use (allocated in `levels`).
    lanes: usize,
    /// The last slack asked for and its lane (timers of a core mostly share a few slacks).
    recent: (u64, u8),
    /// Bit `level` of `busy[lane]` is set when that level has an occupied slot: finding the
    /// earliest slot visits only the levels in use.
    busy: [u16; MAX_LANES],
    /// Bit `lane` is set when `busy[lane]` is not zero: finding the earliest slot visits only
    /// the lanes in use.
    lanes_busy: u32,
    /// Timers whose tick has been reached, in tick order, waiting for `pop_due`.
    due: List,
    /// How many of the due timers are not deferrable.
    due_armed: usize,
    /// How many deferrable timers are pending.
    deferrable: usize,
    /// The tick the wheel has advanced to. Every pending timer not due has a later tick.
    elapsed: u64,
    /// Scratch of `advance`: the (tick, key) of the timers it found due, kept for its
    /// allocation.
    ready: Vec<(u64, u32)>,
}

/// Where a pending timer was held when it was taken out ([`Wheel::take`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// In a list of the wheel (a slot or the due list).
    Placed,
    /// Detached: in no list, with its tick (`Wheel::insert_detached`).
    Detached,
    /// Young: in no list, with its span (`Wheel::store_young`).
    Young,
}

impl<T> Default for Wheel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Wheel<T> {
    /// An empty wheel at tick 0.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty wheel with room for `capacity` timers before it allocates.
    pub fn with_capacity(capacity: usize) -> Self {
        Wheel {
            slab: Slab::with_capacity(capacity),
            levels: new_lane().chain(new_lane()).collect(),
            slacks: {
                let mut s = [0; MAX_LANES];
                s[DEFERRABLE as usize] = u64::MAX;
                s
            },
            lanes: 2,
            recent: (0, EXACT),
            busy: [0; MAX_LANES],
            lanes_busy: 0,
            due: List::EMPTY,
            due_armed: 0,
            deferrable: 0,
            elapsed: 0,
            ready: Vec::new(),
        }
    }

    /// The tick the wheel has advanced to.
    pub fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// Timers pending, due ones included.
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    /// Whether no timer is pending.
    pub fn is_empty(&self) -> bool {
        self.slab.len() == 0
    }

    /// Adds a timer expiring at `tick`. A tick at or before [`elapsed`](Self::elapsed) is due at
    /// once. A `deferrable` timer never counts in [`next_expiration`](Self::next_expiration) but
    /// otherwise expires like any other.
    pub fn insert(&mut self, tick: u64, deferrable: bool, value: T) -> TimerHandle {
        let lane = if deferrable { DEFERRABLE } else { EXACT };
        self.insert_in(tick, lane, value)
    }

    /// Adds a timer due at `tick` that may expire up to `slack` ticks later: the wheel asks
    /// to be advanced by `tick + slack` at the latest ([`next_expiration`]), and expires it at
    /// any advance from `tick` on.
    ///
    /// [`next_expiration`]: Self::next_expiration
    ///
    /// ```
    /// use tickless_timer::internal::Wheel;
    ///
    /// let mut wheel = Wheel::new();
    /// wheel.insert_within(1_000, 500, "a");
    /// wheel.insert_within(1_200, 500, "b");
    /// assert_eq!(wheel.next_expiration(), Some(1_500)); // a's latest instant
    /// assert_eq!(wheel.advance(1_500), 2); // both are due by then: one wakeup
    /// ```
    pub fn insert_within(&mut self, tick: u64, slack: u64, value: T) -> TimerHandle {
        let lane = self.lane_for(slack);
        self.insert_in(tick, lane, value)
    }

    /// The lane timers with `slack` ticks of slack go to, and the slack they get there (no more
    /// than asked: see [`MAX_LANES`]), for [`insert_in_lane`](Self::insert_in_lane) and
    /// [`insert_detached`](Self::insert_detached).
    #[inline]
    pub fn lane(&mut self, slack: u64) -> (Lane, u64) {
        if slack == 0 {
            return (Lane(EXACT), 0);
        }
        let lane = self.lane_for(slack);
        (Lane(lane), self.slacks[lane as usize])
    }

    /// [`insert_within`](Self::insert_within) with the lane already chosen.
    pub fn insert_in_lane(&mut self, tick: u64, lane: Lane, value: T) -> TimerHandle {
        self.insert_in(tick, lane.0, value)
    }

    /// [`insert_in_lane`](Self::insert_in_lane) of a value or of the retained one.
    #[inline(always)]
    pub(crate) fn store_in_lane(&mut self, tick: u64, lane: Lane, fill: Fill<T>) -> TimerHandle {
        match fill {
            Fill::Value(value) => self.insert_in(tick, lane.0, value),
            Fill::Retained => self.insert_retained_in(tick, lane.0),
        }
    }

    /// [`insert_in`](Self::insert_in) of the retained value. Out of line: a reused value mostly
    /// waits detached (a task's next timeout, while the device is armed earlier), and with this
    /// inlined into the registration, `link` compiled with more registers saved, which cost a
    /// timer fire about 12 instructions (`timeout_cost.py`'s churn).
    #[inline(never)]
    fn insert_retained_in(&mut self, tick: u64, lane: u8) -> TimerHandle {
        let (key, handle) = self.slab.reoccupy(tick, lane, Place::FREE);
        self.deferrable += (lane == DEFERRABLE) as usize;
        self.link(key);
        handle
    }

    /// Stores a timer due at `tick` without placing it: it is pending (its handle works for
    /// [`remove`](Self::remove), [`get_mut`](Self::get_mut), [`reset`](Self::reset)), but no
    /// advance expires it and [`next_expiration`](Self::next_expiration) ignores it until
    /// [`attach`](Self::attach) places it. For a caller that knows something else will make it
    /// look again before the timer could be due (a device armed earlier), and that expects many
    /// such timers to be removed before then: a removal of a detached timer touches no list.
    ///
    /// # Panics
    ///
    /// In debug builds, for the deferrable lane: a deferrable timer is never waited for, so
    /// nothing would look again.
    #[inline]
    pub fn insert_detached(&mut self, tick: u64, lane: Lane, value: T) -> TimerHandle {
        self.store_detached(tick, lane, Fill::Value(value))
    }

    /// [`insert_detached`](Self::insert_detached) of a value or of the retained one.
    #[inline(always)]
    pub(crate) fn store_detached(&mut self, tick: u64, lane: Lane, fill: Fill<T>) -> TimerHandle {
        debug_assert_ne!(
            lane,
            Lane::DEFERRABLE,
            "a deferrable timer cannot wait detached"
        );
        match fill {
            Fill::Value(value) => self.slab.insert(tick, lane.0, Place::DETACHED, value).1,
            Fill::Retained => self.slab.reoccupy(tick, lane.0, Place::DETACHED).1,
        }
    }

    /// The value the last [`take_retaining`](Self::take_retaining) kept, if it is still kept.
    #[inline]
    pub(crate) fn retained(&self) -> Option<&T> {
        self.slab.retained()
    }

    /// The value the last [`take_retaining`](Self::take_retaining) kept, no longer kept.
    pub(crate) fn take_retained(&mut self) -> Option<T> {
        self.slab.take_retained()
    }

    /// Whether the handle's timer is pending and detached (not placed yet).
    #[inline]
    pub fn is_detached(&self, handle: TimerHandle) -> bool {
        self.slab
            .key_of(handle)
            .is_some_and(|key| self.slab.nodes[key as usize].place == Place::DETACHED)
    }

    /// Places a timer stored by [`insert_detached`](Self::insert_detached) in its lane.
    /// `false`, doing nothing, for a stale handle or one already placed (removed, reset or
    /// attached since).
    pub fn attach(&mut self, handle: TimerHandle) -> bool {
        let Some(key) = self.slab.key_of(handle) else {
            return false;
        };
        if self.slab.nodes[key as usize].place != Place::DETACHED {
            return false;
        }
        self.link(key);
        true
    }

    fn insert_in(&mut self, tick: u64, lane: u8, value: T) -> TimerHandle {
        let (key, handle) = self.slab.insert(tick, lane, Place::FREE, value);
        self.deferrable += (lane == DEFERRABLE) as usize;
        self.link(key);
        handle
    }

    /// The lane of timers with `slack` ticks of slack: its own, made if there is room, else the
    /// one with the largest slack below it.
    fn lane_for(&mut self, slack: u64) -> u8 {
        if slack == 0 {
            return EXACT;
        }
        if self.recent.0 == slack {
            return self.recent.1;
        }
        let lane = self.find_lane(slack);
        self.recent = (slack, lane);
        lane
    }

    fn find_lane(&mut self, slack: u64) -> u8 {
        let mut below = EXACT;
        for (lane, &s) in self.slacks[..self.lanes].iter().enumerate().skip(2) {
            if s == slack {
                return lane as u8;
            }
            if s < slack && s > self.slacks[below as usize] {
                below = lane as u8;
            }
        }
        if self.lanes == MAX_LANES {
            return below;
        }
        self.levels.extend(new_lane());
        self.slacks[self.lanes] = slack;
        self.lanes += 1;
        (self.lanes - 1) as u8
    }

    /// The slack, in ticks, of a pending timer: 0 for one without, `u64::MAX` for a
    /// deferrable one.
    pub fn slack_of(&self, handle: TimerHandle) -> Option<u64> {
        let key = self.slab.key_of(handle)?;
        Some(self.slacks[self.slab.nodes[key as usize].lane as usize])
    }

    /// Whether the handle's timer is still pending (not fired, not removed).
    pub fn contains(&self, handle: TimerHandle) -> bool {
        self.slab.key_of(handle).is_some()
    }

    /// The tick of a pending timer.
    pub fn tick_of(&self, handle: TimerHandle) -> Option<u64> {
        let key = self.slab.key_of(handle)?;
        let node = &self.slab.nodes[key as usize];
        // A young timer has no tick yet (its span is kept there).
        (node.place != Place::YOUNG).then_some(node.tick)
    }

    /// The value of a pending timer, to update in place (a new waker, say).
    pub fn get_mut(&mut self, handle: TimerHandle) -> Option<&mut T> {
        let key = self.slab.key_of(handle)?;
        self.slab.nodes[key as usize].value.as_mut()
    }

    /// Removes a pending timer and returns its value; `None` for a stale handle.
    pub fn remove(&mut self, handle: TimerHandle) -> Option<T> {
        self.take(handle).map(|(value, _)| value)
    }

    /// Removes a pending timer and returns its value and where it was held (detached timers
    /// and young ones were in no list); `None` for a stale handle. One look-up of the handle.
    #[inline]
    pub(crate) fn take(&mut self, handle: TimerHandle) -> Option<(T, Held)> {
        let key = self.slab.key_of(handle)?;
        let held = self.unplace(key);
        Some((self.slab.remove(key, Place::FREE), held))
    }

    /// Removes a pending timer as [`take`](Self::take) does, but keeps its value in the freed
    /// entry, for the next store of [`Fill::Retained`] to reuse. Returns where it was held,
    /// and the value kept before, now released; `None` for a stale handle.
    #[inline]
    pub(crate) fn take_retaining(&mut self, handle: TimerHandle) -> Option<(Option<T>, Held)> {
        let key = self.slab.key_of(handle)?;
        let held = self.unplace(key);
        Some((self.slab.remove_retaining(key, Place::FREE), held))
    }

    /// Takes a pending timer out of its slot's list and its lane's count, before its entry is
    /// freed; where it was held (a detached or young timer is in no list, and never
    /// deferrable: `store_detached`, `store_young`).
    #[inline(always)]
    fn unplace(&mut self, key: u32) -> Held {
        match self.slab.nodes[key as usize].place {
            Place::DETACHED => return Held::Detached,
            Place::YOUNG => return Held::Young,
            _ => {}
        }
        self.unlink(key);
        self.deferrable -= (self.slab.nodes[key as usize].lane == DEFERRABLE) as usize;
        Held::Placed
    }

    /// Stores a young timer: pending (its handle works for [`remove`](Self::remove),
    /// [`get_mut`](Self::get_mut), [`reset_within`](Self::reset_within)), held in no list,
    /// with `span` (a length, in the caller's unit) kept in place of its tick until
    /// [`place_young`](Self::place_young) gives it one. For a caller that learns the instant
    /// the span counts from only later (`TimerQueue::insert_young`). Returns its key too.
    #[inline(always)]
    pub(crate) fn store_young(
        &mut self,
        span: u64,
        lane: Lane,
        fill: Fill<T>,
    ) -> (u32, TimerHandle) {
        debug_assert_ne!(lane, Lane::DEFERRABLE, "a deferrable timer cannot be young");
        match fill {
            Fill::Value(value) => self.slab.insert(span, lane.0, Place::YOUNG, value),
            Fill::Retained => self.slab.reoccupy(span, lane.0, Place::YOUNG),
        }
    }

    /// Whether the handle names a young timer (not placed, reset or removed since).
    #[inline]
    pub(crate) fn is_young(&self, handle: TimerHandle) -> bool {
        self.slab
            .key_of(handle)
            .is_some_and(|key| self.slab.nodes[key as usize].place == Place::YOUNG)
    }

    /// The span and the lane's slack (ticks) of the young timer at `key`; `None` if the entry
    /// holds no young timer (vacant, or placed since). A key, not a handle: whatever young
    /// timer the entry holds now is one still to place.
    #[inline(always)]
    pub(crate) fn young_at(&self, key: u32) -> Option<(u64, u64)> {
        let node = self.slab.nodes.get(key as usize)?;
        (node.place == Place::YOUNG).then(|| (node.tick, self.slacks[node.lane as usize]))
    }

    /// Gives the young timer at `key` its tick: placed in its lane, or, if `detached`, held
    /// detached (see [`insert_detached`](Self::insert_detached)). Returns its handle.
    #[inline]
    pub(crate) fn place_young(&mut self, key: u32, tick: u64, detached: bool) -> TimerHandle {
        let node = &mut self.slab.nodes[key as usize];
        debug_assert_eq!(node.place, Place::YOUNG);
        node.tick = tick;
        if detached {
            node.place = Place::DETACHED;
        } else {
            node.place = Place::FREE;
            self.link(key);
        }
        self.slab.handle_of(key)
    }

    /// Frees an unlinked node, returning its value.
    #[inline]
    fn free(&mut self, key: u32) -> T {
        self.deferrable -= (self.slab.nodes[key as usize].lane == DEFERRABLE) as usize;
        self.slab.remove(key, Place::FREE)
    }

    /// Moves a pending timer to a new tick, keeping its handle and slack. `false` for a stale
    /// handle.
    pub fn reset(&mut self, handle: TimerHandle, tick: u64) -> bool {
        let Some(key) = self.slab.key_of(handle) else {
            return false;
        };
        self.unlink(key);
        self.slab.nodes[key as usize].tick = tick;
        self.link(key);
        true
    }

    /// Moves a pending, not deferrable, timer to a new tick and slack (as
    /// [`insert_within`](Self::insert_within)), keeping its handle. `false` for a stale handle.
    pub fn reset_within(&mut self, handle: TimerHandle, tick: u64, slack: u64) -> bool {
        let Some(key) = self.slab.key_of(handle) else {
            return false;
        };
        let lane = self.lane_for(slack);
        self.unlink(key);
        let node = &mut self.slab.nodes[key as usize];
        self.deferrable -= (node.lane == DEFERRABLE) as usize;
        node.tick = tick;
        node.lane = lane;
        self.link(key);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_last_lane_a_slack_takes_the_largest_one_below() {
        let mut w = Wheel::new();
        // Lanes 2 .. MAX_LANES get slacks 10, 20, ...: all in use.
        for i in 1..=(MAX_LANES as u64 - 2) {
            let h = w.insert_within(1_000, i * 10, ());
            assert_eq!(w.slack_of(h), Some(i * 10));
        }
        assert_eq!(w.lanes, MAX_LANES);
        let h = w.insert_within(1_000, 55, ());
        assert_eq!(w.slack_of(h), Some(50), "earlier than asked, never later");
        let h = w.insert_within(1_000, 5, ());
        assert_eq!(w.slack_of(h), Some(0), "below every lane: the exact one");
        let h = w.insert_within(1_000, 20, ());
        assert_eq!(w.slack_of(h), Some(20), "an existing slack keeps its lane");
        assert!(w.reset_within(h, 2_000, 1_000_000));
        assert_eq!(w.slack_of(h), Some((MAX_LANES as u64 - 2) * 10));
        assert_eq!(w.lanes, MAX_LANES);
    }

    #[test]
    fn a_deferrable_timer_reset_with_slack_arms_again() {
        let mut w = Wheel::new();
        let h = w.insert(10, true, ());
        assert!(w.has_deferrable());
        assert_eq!(w.next_expiration(), None);
        assert!(w.reset_within(h, 20, 5));
        assert!(!w.has_deferrable());
        assert_eq!(w.slack_of(h), Some(5));
        assert_eq!(w.next_expiration(), Some(25));
    }
}
