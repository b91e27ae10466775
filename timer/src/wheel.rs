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

use crate::slab::{Slab, TimerHandle, NIL};

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

/// Where a node lives, packed in a `u16`: a slot, the due list or nowhere (vacant).
///
/// A slot packs as `lane << 10 | level << 6 | slot` (shifts, not divisions, on the hot path).
pub(crate) struct Place;

impl Place {
    /// Held outside every list: [`Wheel::insert_detached`].
    const DETACHED: u16 = u16::MAX - 2;
    /// The due list.
    const DUE: u16 = u16::MAX - 1;
    /// Vacant entry.
    const FREE: u16 = u16::MAX;

    fn slot(lane: usize, level: usize, slot: usize) -> u16 {
        ((lane << 10) | (level << 6) | slot) as u16
    }

    fn unpack(place: u16) -> (usize, usize, usize) {
        let p = place as usize;
        (p >> 10, (p >> 6) & 15, p & 63)
    }
}

/// A lane of the wheel: the timers of one slack (see the module docs), from [`Wheel::lane`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane(u8);

impl Lane {
    /// The lane of deferrable timers.
    pub(crate) const DEFERRABLE: Lane = Lane(DEFERRABLE);
}

/// A lane's levels, empty.
fn new_lane() -> impl Iterator<Item = Level> {
    (0..LEVELS).map(|_| Level::new())
}

/// The level at which a tick sits relative to `elapsed` (which must be earlier).
fn level_for(elapsed: u64, tick: u64) -> usize {
    let significant = 63 - ((elapsed ^ tick) | (SLOTS as u64 - 1)).leading_zeros();
    (significant / BITS) as usize
}

/// The slot of `tick` at `level`.
fn slot_for(tick: u64, level: usize) -> usize {
    ((tick >> (BITS * level as u32)) & (SLOTS as u64 - 1)) as usize
}

/// A doubly linked list of nodes.
#[derive(Clone, Copy)]
struct List {
    /// First node, or `NIL`.
    head: u32,
    /// Last node, or `NIL`.
    tail: u32,
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };
}

/// One slot of a level.
#[derive(Clone, Copy)]
struct Slot {
    /// The timers in the slot.
    list: List,
    /// No timer in the slot expires before this tick (`u64::MAX` when empty).
    bound: u64,
}

/// One level: 64 slots and their occupancy bitmap.
struct Level {
    /// Bit `i` is set when slot `i` holds a timer.
    occupied: u64,
    /// Bit `i` is set when slot `i`'s bound may be early: its earliest timer was removed and
    /// the bound was not recomputed (that waits until the bound is asked for).
    stale: u64,
    /// The slots.
    slots: [Slot; SLOTS],
}

impl Level {
    fn new() -> Self {
        Level {
            occupied: 0,
            stale: 0,
            slots: [Slot {
                list: List::EMPTY,
                bound: u64::MAX,
            }; SLOTS],
        }
    }

    /// The first occupied slot at or after the one `elapsed` is in, and its bound.
    fn next_slot(&self, elapsed: u64, level: usize) -> Option<(usize, u64)> {
        if self.occupied == 0 {
            return None;
        }
        let current = slot_for(elapsed, level) as u32;
        // Invariant: no timer sits in a slot before `elapsed`'s (see the module docs), so the
        // shifted bitmap is never empty here.
        let ahead = self.occupied >> current;
        debug_assert_ne!(ahead, 0, "timer wheel: a slot behind `elapsed` is occupied");
        let slot = (current + ahead.trailing_zeros()) as usize;
        Some((slot, self.slots[slot].bound))
    }
}

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

    /// Stores a timer due at `tick` without placing it: it is pending (its handle works for
    /// [`remove`](Self::remove), [`get_mut`](Self::get_mut), [`reset`](Self::reset)), but no
    /// advance expires it and [`next_expiration`](Self::next_expiration) ignores it until
    /// [`attach`](Self::attach) places it. For a caller that knows something else will make it
    /// look again before the timer could be due (a device armed earlier), and that expects many
    /// such timers to be removed before then: a removal of a detached timer touches no list.
    #[inline]
    pub fn insert_detached(&mut self, tick: u64, lane: Lane, value: T) -> TimerHandle {
        self.slab.insert(tick, lane.0, Place::DETACHED, value).1
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
        Some(self.slab.nodes[key as usize].tick)
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

    /// Removes a pending timer and returns its value and whether it was detached (stored by
    /// [`insert_detached`](Self::insert_detached) and never placed); `None` for a stale handle.
    /// One look-up of the handle.
    #[inline]
    pub(crate) fn take(&mut self, handle: TimerHandle) -> Option<(T, bool)> {
        let key = self.slab.key_of(handle)?;
        let detached = self.slab.nodes[key as usize].place == Place::DETACHED;
        if !detached {
            self.unlink(key);
        }
        Some((self.free(key), detached))
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

    /// The latest tick by which the wheel must be advanced for no timer to expire later than
    /// its slack allows: the smallest tick plus slack of the non-deferrable timers (for timers
    /// without slack, the earliest tick). Exact, or early when the earliest timer of a slot of
    /// more than eight was removed (see the module docs); never late. `Some(elapsed)` while
    /// non-deferrable timers are due and not yet popped.
    ///
    /// Takes `&mut self` to make a stale bound exact again where that is cheap: removals only
    /// mark a bound stale, so a cancel costs no scan, and the scan happens here, at most once
    /// per stale slot, only for the slot that decides the answer.
    pub fn next_expiration(&mut self) -> Option<u64> {
        if self.due_armed > 0 {
            return Some(self.elapsed);
        }
        loop {
            let (lane, level, slot, latest) = self.earliest_slot(true)?;
            let l = &mut self.levels[lane * LEVELS + level];
            if l.stale & (1 << slot) == 0 {
                return Some(latest);
            }
            l.stale &= !(1 << slot);
            let head = l.slots[slot].list.head;
            match self.min_tick(head, RESCAN_LIMIT) {
                // Exact again: the earliest slot may now be another one.
                Some(min) => self.levels[lane * LEVELS + level].slots[slot].bound = min,
                // Too large to scan: the early bound stands (it costs at most one early wakeup).
                None => return Some(latest),
            }
        }
    }

    /// A bound on the earliest tick of the pending timers not yet due, deferrable ones
    /// included: never later than it, exact for a timer in a level-0 slot (within 64 ticks of
    /// `elapsed`) and for any slot whose earliest timer was not removed (see
    /// [`next_expiration`](Self::next_expiration)). `None` when none is pending.
    pub fn next_deadline(&self) -> Option<u64> {
        self.earliest_slot(false).map(|(.., bound)| bound)
    }

    /// Advances the wheel to `now`: every timer whose tick is at or before `now` moves to the due
    /// list, in tick order, for [`pop_due`](Self::pop_due). Returns how many became due.
    /// Advancing to a tick before `elapsed` does nothing.
    pub fn advance(&mut self, now: u64) -> usize {
        // Timers found due are gathered and sorted once, rather than cascaded level by level
        // down to the tick they are due at (a slot of 64 µs emptied at once is one pop, not one
        // per timer in it).
        let mut ready = std::mem::take(&mut self.ready);
        while let Some((lane, level, slot, bound)) = self.earliest_slot(false) {
            if bound > now {
                break;
            }
            self.elapsed = self.elapsed.max(bound);
            let s = &mut self.levels[lane * LEVELS + level].slots[slot];
            let mut key = s.list.head;
            *s = Slot {
                list: List::EMPTY,
                bound: u64::MAX,
            };
            let l = &mut self.levels[lane * LEVELS + level];
            l.occupied &= !(1 << slot);
            l.stale &= !(1 << slot);
            if l.occupied == 0 {
                self.busy[lane] &= !(1 << level);
                if self.busy[lane] == 0 {
                    self.lanes_busy &= !(1 << lane);
                }
            }
            while key != NIL {
                let node = &self.slab.nodes[key as usize];
                let (next, tick) = (node.next, node.tick);
                if tick <= now {
                    ready.push((tick, key));
                } else {
                    // Due later: placed again, at a lower level (its tick is past `elapsed`).
                    self.link(key);
                }
                key = next;
            }
        }
        self.elapsed = self.elapsed.max(now);
        // Stable: timers due at the same tick keep the order they were found in.
        ready.sort_by_key(|&(tick, _)| tick);
        let moved = ready.len();
        for &(_, key) in &ready {
            self.push_back(key, Place::DUE);
        }
        ready.clear();
        self.ready = ready;
        moved
    }

    /// Takes the next due timer, if any.
    pub fn pop_due(&mut self) -> Option<(TimerHandle, T)> {
        let key = self.due.head;
        if key == NIL {
            return None;
        }
        let handle = self.slab.handle_of(key);
        self.unlink(key);
        Some((handle, self.free(key)))
    }

    /// Whether a deferrable timer is pending (due or not).
    pub fn has_deferrable(&self) -> bool {
        self.deferrable > 0
    }

    /// Whether a timer is due and not yet popped.
    pub fn has_due(&self) -> bool {
        self.due.head != NIL
    }

    /// The occupied slot with the smallest bound, over every lane (`latest == false`); or, over
    /// the non-deferrable lanes, the one with the smallest bound plus its lane's slack, given in
    /// place of the bound (`latest == true`).
    fn earliest_slot(&self, latest: bool) -> Option<(usize, usize, usize, u64)> {
        let mut best: Option<(usize, usize, usize, u64)> = None;
        let mut lanes = self.lanes_busy;
        if latest {
            lanes &= !(1 << DEFERRABLE);
        }
        while lanes != 0 {
            let lane = lanes.trailing_zeros() as usize;
            lanes &= lanes - 1;
            let slack = if latest { self.slacks[lane] } else { 0 };
            let mut busy = self.busy[lane];
            while busy != 0 {
                let level = busy.trailing_zeros() as usize;
                busy &= busy - 1;
                if let Some((slot, bound)) =
                    self.levels[lane * LEVELS + level].next_slot(self.elapsed, level)
                {
                    let key = bound.saturating_add(slack);
                    if best.is_none_or(|b| key < b.3) {
                        best = Some((lane, level, slot, key));
                    }
                }
            }
        }
        best
    }

    /// Links an unlinked node into the due list or its slot. Returns whether it became due.
    fn link(&mut self, key: u32) -> bool {
        let node = &self.slab.nodes[key as usize];
        let (tick, lane) = (node.tick, node.lane as usize);
        if tick <= self.elapsed {
            self.push_back(key, Place::DUE);
            return true;
        }
        let level = level_for(self.elapsed, tick);
        let slot = slot_for(tick, level);
        self.busy[lane] |= 1 << level;
        self.lanes_busy |= 1 << lane;
        let l = &mut self.levels[lane * LEVELS + level];
        l.occupied |= 1 << slot;
        if tick < l.slots[slot].bound {
            // Below every timer of the slot: the bound is exact again.
            l.slots[slot].bound = tick;
            l.stale &= !(1 << slot);
        }
        self.push_back(key, Place::slot(lane, level, slot));
        false
    }

    /// The list a place names.
    fn list_mut(&mut self, place: u16) -> &mut List {
        if place == Place::DUE {
            return &mut self.due;
        }
        let (lane, level, slot) = Place::unpack(place);
        &mut self.levels[lane * LEVELS + level].slots[slot].list
    }

    fn push_back(&mut self, key: u32, place: u16) {
        let list = self.list_mut(place);
        let tail = list.tail;
        list.tail = key;
        if tail == NIL {
            list.head = key;
        }
        if tail != NIL {
            self.slab.nodes[tail as usize].next = key;
        }
        let node = &mut self.slab.nodes[key as usize];
        node.prev = tail;
        node.next = NIL;
        node.place = place;
        if place == Place::DUE && node.lane != DEFERRABLE {
            self.due_armed += 1;
        }
    }

    /// Unlinks a node from its list, emptying the slot's bitmap bit and bound if it was last.
    fn unlink(&mut self, key: u32) {
        let node = &self.slab.nodes[key as usize];
        let (prev, next, place) = (node.prev, node.next, node.place);
        if place == Place::DETACHED {
            self.slab.nodes[key as usize].place = Place::FREE;
            return;
        }
        if place == Place::DUE && node.lane != DEFERRABLE {
            self.due_armed -= 1;
        }
        if prev != NIL {
            self.slab.nodes[prev as usize].next = next;
        }
        if next != NIL {
            self.slab.nodes[next as usize].prev = prev;
        }
        let list = self.list_mut(place);
        if prev == NIL {
            list.head = next;
        }
        if next == NIL {
            list.tail = prev;
        }
        let head = list.head;
        if place != Place::DUE {
            let (lane, level, slot) = Place::unpack(place);
            let tick = self.slab.nodes[key as usize].tick;
            let l = &mut self.levels[lane * LEVELS + level];
            if head == NIL {
                l.occupied &= !(1 << slot);
                l.stale &= !(1 << slot);
                l.slots[slot].bound = u64::MAX;
                if l.occupied == 0 {
                    self.busy[lane] &= !(1 << level);
                    if self.busy[lane] == 0 {
                        self.lanes_busy &= !(1 << lane);
                    }
                }
            } else if tick == l.slots[slot].bound {
                // The slot's earliest may have gone: `next_expiration` rescans it if asked.
                l.stale |= 1 << slot;
            }
        }
        self.slab.nodes[key as usize].place = Place::FREE;
    }

    /// The smallest tick of the list starting at `head`, if it has at most `limit` nodes.
    fn min_tick(&self, head: u32, limit: usize) -> Option<u64> {
        let mut key = head;
        let mut min = u64::MAX;
        for _ in 0..limit {
            if key == NIL {
                return Some(min);
            }
            let node = &self.slab.nodes[key as usize];
            min = min.min(node.tick);
            key = node.next;
        }
        (key == NIL).then_some(min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_maths() {
        assert_eq!(level_for(0, 1), 0);
        assert_eq!(level_for(0, 63), 0);
        assert_eq!(level_for(0, 64), 1);
        assert_eq!(level_for(63, 64), 1);
        assert_eq!(level_for(64, 127), 0);
        assert_eq!(level_for(0, 4095), 1);
        assert_eq!(level_for(0, 4096), 2);
        assert_eq!(level_for(0, u64::MAX), LEVELS - 1);
        assert_eq!(slot_for(4096 * 3 + 5, 2), 3);
        assert_eq!(slot_for(u64::MAX, LEVELS - 1), 15);
    }

    #[test]
    fn place_packs_every_slot() {
        for lane in 0..MAX_LANES {
            for level in 0..LEVELS {
                for slot in 0..SLOTS {
                    let p = Place::slot(lane, level, slot);
                    assert!(p < Place::DETACHED);
                    assert_eq!(Place::unpack(p), (lane, level, slot));
                }
            }
        }
    }

    #[test]
    fn stale_bound_is_early_then_exact() {
        let mut w = Wheel::new();
        let a = w.insert(5_000, false, 'a');
        w.insert(6_000, false, 'b');
        assert_eq!(w.next_expiration(), Some(5_000));
        w.remove(a);
        // A small slot gets its exact bound back.
        assert_eq!(w.next_expiration(), Some(6_000));
        // A large one keeps the removed timer's tick: early, never late.
        let first = w.insert(5_500, false, 'c');
        for i in 0..RESCAN_LIMIT as u64 {
            w.insert(7_000 + i, false, 'd');
        }
        assert_eq!(w.next_expiration(), Some(5_500));
        w.remove(first);
        assert_eq!(w.next_expiration(), Some(5_500));
        assert_eq!(w.advance(5_500), 0);
        assert_eq!(w.next_expiration(), Some(6_000));
        assert_eq!(w.advance(6_000), 1);
        assert_eq!(w.pop_due().map(|(_, v)| v), Some('b'));
        assert_eq!(w.next_expiration(), Some(7_000));
    }

    #[test]
    fn due_in_tick_order_after_a_long_jump() {
        let mut w = Wheel::new();
        let ticks = [9_000_000u64, 70, 4_100, 4_097, 1 << 40, 65, 262_200];
        for &t in &ticks {
            w.insert(t, false, t);
        }
        w.advance(u64::MAX);
        let mut fired = Vec::new();
        while let Some((_, t)) = w.pop_due() {
            fired.push(t);
        }
        let mut sorted = ticks.to_vec();
        sorted.sort();
        assert_eq!(fired, sorted);
    }

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

    #[test]
    fn deferrable_never_counts_for_arming() {
        let mut w = Wheel::new();
        w.insert(10, true, ());
        assert_eq!(w.next_expiration(), None);
        assert_eq!(w.advance(10), 1);
    }
}
