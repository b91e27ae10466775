//! The wheel's storage, level by level: where a node lives (`Place`), lanes, the level and
//! slot of a tick, and a level's 64 slots with their occupancy and staleness bitmaps.

use super::{BITS, DEFERRABLE, LEVELS, SLOTS};
use crate::slab::NIL;

/// Where a node lives, packed in a `u16`: a slot, the due list or nowhere (vacant).
///
/// A slot packs as `lane << 10 | level << 6 | slot` (shifts, not divisions, on the hot path).
pub(crate) struct Place;

impl Place {
    /// Held outside every list, its span in place of its tick, until it is settled: a young
    /// timer ([`TimerQueue::insert_young`](crate::TimerQueue::insert_young)).
    pub(crate) const YOUNG: u16 = u16::MAX - 3;
    /// Held outside every list: [`Wheel::insert_detached`].
    pub(crate) const DETACHED: u16 = u16::MAX - 2;
    /// The due list.
    pub(crate) const DUE: u16 = u16::MAX - 1;
    /// Vacant entry.
    pub(crate) const FREE: u16 = u16::MAX;

    pub(super) fn slot(lane: usize, level: usize, slot: usize) -> u16 {
        ((lane << 10) | (level << 6) | slot) as u16
    }

    pub(super) fn unpack(place: u16) -> (usize, usize, usize) {
        let p = place as usize;
        (p >> 10, (p >> 6) & 15, p & 63)
    }
}

/// A lane of the wheel: the timers of one slack (see the module docs), from [`Wheel::lane`](super::Wheel::lane).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane(pub(super) u8);

impl Lane {
    /// The lane of deferrable timers.
    pub(crate) const DEFERRABLE: Lane = Lane(DEFERRABLE);
}

/// A lane's levels, empty.
pub(super) fn new_lane() -> impl Iterator<Item = Level> {
    (0..LEVELS).map(|_| Level::new())
}

/// The level at which a tick sits relative to `elapsed` (which must be earlier).
pub(super) fn level_for(elapsed: u64, tick: u64) -> usize {
    let significant = 63 - ((elapsed ^ tick) | (SLOTS as u64 - 1)).leading_zeros();
    (significant / BITS) as usize
}

/// The slot of `tick` at `level`.
pub(super) fn slot_for(tick: u64, level: usize) -> usize {
    ((tick >> (BITS * level as u32)) & (SLOTS as u64 - 1)) as usize
}

/// A doubly linked list of nodes.
#[derive(Clone, Copy)]
pub(super) struct List {
    /// First node, or `NIL`.
    pub(super) head: u32,
    /// Last node, or `NIL`.
    pub(super) tail: u32,
}

impl List {
    pub(super) const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };
}

/// One slot of a level.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    /// The timers in the slot.
    pub(super) list: List,
    /// No timer in the slot expires before this tick (`u64::MAX` when empty).
    pub(super) bound: u64,
}

/// One level: 64 slots and their occupancy bitmap.
pub(super) struct Level {
    /// Bit `i` is set when slot `i` holds a timer.
    pub(super) occupied: u64,
    /// Bit `i` is set when slot `i`'s bound may be early: its earliest timer was removed and
    /// the bound was not recomputed (that waits until the bound is asked for).
    pub(super) stale: u64,
    /// The slots.
    pub(super) slots: [Slot; SLOTS],
}

impl Level {
    pub(super) fn new() -> Self {
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
    pub(super) fn next_slot(&self, elapsed: u64, level: usize) -> Option<(usize, u64)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wheel::MAX_LANES;

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
                    assert!(p < Place::YOUNG);
                    assert_eq!(Place::unpack(p), (lane, level, slot));
                }
            }
        }
    }
}
