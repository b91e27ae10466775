//! Expiry: the instant the wheel must be advanced by (`next_expiration`), advancing it
//! (timers cascaded to lower levels, or due, in tick order), and popping what is due.

use super::level::{List, Place, Slot};
use super::{Wheel, DEFERRABLE, LEVELS, RESCAN_LIMIT};
use crate::slab::{TimerHandle, NIL};

impl<T> Wheel<T> {
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
        self.pop_due_at().map(|(handle, _, value)| (handle, value))
    }

    /// Takes the next due timer, if any, with the tick it was due at (its deadline, rounded
    /// up to the resolution).
    #[inline]
    pub fn pop_due_at(&mut self) -> Option<(TimerHandle, u64, T)> {
        let key = self.due.head;
        if key == NIL {
            return None;
        }
        let handle = self.slab.handle_of(key);
        let tick = self.slab.nodes[key as usize].tick;
        self.unlink(key);
        Some((handle, tick, self.free(key)))
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
}

#[cfg(test)]
mod tests {
    use crate::wheel::{Wheel, RESCAN_LIMIT};

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
    fn deferrable_never_counts_for_arming() {
        let mut w = Wheel::new();
        w.insert(10, true, ());
        assert_eq!(w.next_expiration(), None);
        assert_eq!(w.advance(10), 1);
    }
}
