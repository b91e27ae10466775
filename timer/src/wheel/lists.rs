//! Linking nodes into the due list and the slots, and out of them: the bookkeeping every
//! insert, removal and cascade shares (bitmaps, bounds made stale, the count of due timers).

use super::level::{level_for, slot_for, List, Place};
use super::{Wheel, DEFERRABLE, LEVELS};
use crate::slab::NIL;

impl<T> Wheel<T> {
    /// Links an unlinked node into the due list or its slot. Returns whether it became due.
    pub(super) fn link(&mut self, key: u32) -> bool {
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

    pub(super) fn push_back(&mut self, key: u32, place: u16) {
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
    pub(super) fn unlink(&mut self, key: u32) {
        let node = &self.slab.nodes[key as usize];
        let (prev, next, place) = (node.prev, node.next, node.place);
        if place == Place::DETACHED || place == Place::YOUNG {
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
    pub(super) fn min_tick(&self, head: u32, limit: usize) -> Option<u64> {
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
