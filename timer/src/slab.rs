//! Storage for timer entries: a slab addressed by [`TimerHandle`].
//!
//! Our own rather than the `slab` crate's, for one reason: the generation must survive the
//! removal of an entry, so that a handle to a removed timer can never reach the entry that later
//! reuses its key. Vacant entries keep their generation and link into a free list through the
//! same `next` field that occupied entries use for their slot list.

/// Marks the end of a list (and "no entry").
pub(crate) const NIL: u32 = u32::MAX;

/// Names one timer for as long as it is pending.
///
/// A handle stays valid until its timer fires or is cancelled; after that every operation on it
/// is a no-op that says so, even once the storage has been reused for another timer (the
/// generation differs). Generations are 32 bits: a handle could only alias a new timer after the
/// same entry has been reused 2^32 times while the stale handle was kept.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct TimerHandle {
    /// Index of the entry in the slab.
    key: u32,
    /// Generation of the entry when the handle was made.
    generation: u32,
}

/// One timer, pending or vacant.
pub(crate) struct Node<T> {
    /// The tick the timer is due at (its deadline rounded up to the resolution).
    pub(crate) tick: u64,
    /// Next entry in the same list (slot, due list or free list).
    pub(crate) next: u32,
    /// Previous entry in the same list; `NIL` at the head.
    pub(crate) prev: u32,
    /// Bumped each time the entry is freed.
    pub(crate) generation: u32,
    /// Which list holds the entry: see [`Place`](crate::wheel::Place).
    pub(crate) place: u16,
    /// Its lane: 0 without slack, 1 deferrable, others one slack each (see the wheel).
    pub(crate) lane: u8,
    /// The caller's value; `None` while the entry is vacant.
    pub(crate) value: Option<T>,
}

/// What an insert stores: a value, or the value the retained entry kept (see
/// [`Slab::remove_retaining`] and [`Slab::reoccupy`]).
pub(crate) enum Fill<T> {
    /// This value, in a free entry.
    Value(T),
    /// The retained entry, with the value it kept. There must be one.
    Retained,
}

/// A vector of nodes with an intrusive free list.
pub(crate) struct Slab<T> {
    /// All entries, pending and vacant.
    pub(crate) nodes: Vec<Node<T>>,
    /// Head of the free list.
    free: u32,
    /// A vacant entry that kept its value for the next insert to reuse, off the free list
    /// ([`remove_retaining`](Self::remove_retaining), [`reoccupy`](Self::reoccupy)); `NIL` if
    /// none. At most one: a value
    /// kept is a value not dropped (a waker keeps its task's memory).
    retained: u32,
    /// Number of occupied entries.
    len: usize,
}

impl<T> Slab<T> {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Slab {
            nodes: Vec::with_capacity(capacity),
            free: NIL,
            retained: NIL,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Stores a value and returns its key and handle. The node is unlinked.
    ///
    /// Always inlined: on a timeout's path, the call and the moves of the value through it
    /// were about 15 of the instructions a timeout costs (`benches/scripts/timeout_cost.py`).
    #[inline(always)]
    pub(crate) fn insert(
        &mut self,
        tick: u64,
        lane: u8,
        place: u16,
        value: T,
    ) -> (u32, TimerHandle) {
        self.len += 1;
        if self.free != NIL {
            // A vacant entry: field by field, keeping its generation (and no drop of its
            // value, which is `None`); its `prev` is `NIL` already (`remove` leaves it so).
            let key = self.free;
            let slot = &mut self.nodes[key as usize];
            self.free = slot.next;
            slot.tick = tick;
            slot.next = NIL;
            slot.place = place;
            slot.lane = lane;
            let old = slot.value.replace(value);
            debug_assert!(
                old.is_none(),
                "tickless-timer: the free list held an occupied entry"
            );
            std::mem::forget(old);
            return (
                key,
                TimerHandle {
                    key,
                    generation: slot.generation,
                },
            );
        }
        let node = Node {
            tick,
            next: NIL,
            prev: NIL,
            generation: 0,
            place,
            lane,
            value: Some(value),
        };
        let key = u32::try_from(self.nodes.len())
            .ok()
            .filter(|&k| k != NIL)
            .expect("tickless-timer: more than 4,294,967,294 timers pending at once");
        self.nodes.push(node);
        (key, TimerHandle { key, generation: 0 })
    }

    /// Occupies the retained entry again, with the value it kept.
    ///
    /// # Panics
    ///
    /// If no entry is retained.
    #[inline(always)]
    pub(crate) fn reoccupy(&mut self, tick: u64, lane: u8, place: u16) -> (u32, TimerHandle) {
        let key = std::mem::replace(&mut self.retained, NIL);
        let slot = &mut self.nodes[key as usize];
        debug_assert!(
            slot.value.is_some(),
            "tickless-timer: a retained entry lost its value"
        );
        // Its `next` and `prev` are `NIL` (`remove_retaining`), its generation already new.
        slot.tick = tick;
        slot.place = place;
        slot.lane = lane;
        self.len += 1;
        (
            key,
            TimerHandle {
                key,
                generation: slot.generation,
            },
        )
    }

    /// The value the retained entry kept, if an entry is retained.
    #[inline]
    pub(crate) fn retained(&self) -> Option<&T> {
        self.nodes.get(self.retained as usize)?.value.as_ref()
    }

    /// Frees the retained entry for good, returning the value it kept.
    pub(crate) fn take_retained(&mut self) -> Option<T> {
        let key = std::mem::replace(&mut self.retained, NIL);
        let node = self.nodes.get_mut(key as usize)?;
        let value = node.value.take();
        node.next = self.free;
        self.free = key;
        value
    }

    /// The key of a handle's entry, if the handle is still current.
    #[inline]
    pub(crate) fn key_of(&self, handle: TimerHandle) -> Option<u32> {
        let node = self.nodes.get(handle.key as usize)?;
        (node.generation == handle.generation && node.value.is_some()).then_some(handle.key)
    }

    /// The handle of an occupied key.
    pub(crate) fn handle_of(&self, key: u32) -> TimerHandle {
        TimerHandle {
            key,
            generation: self.nodes[key as usize].generation,
        }
    }

    /// Frees an (unlinked) entry and returns its value; its handles go stale.
    #[inline]
    pub(crate) fn remove(&mut self, key: u32, vacant_place: u16) -> T {
        let node = &mut self.nodes[key as usize];
        let value = node
            .value
            .take()
            .expect("tickless-timer: removing a vacant entry");
        node.generation = node.generation.wrapping_add(1);
        node.place = vacant_place;
        node.next = self.free;
        node.prev = NIL;
        self.free = key;
        self.len -= 1;
        value
    }

    /// Frees an (unlinked) entry as [`remove`](Self::remove) does, its handles going stale, but
    /// keeps its value in it, off the free list, for [`reoccupy`](Self::reoccupy) to reuse.
    /// Returns the value the entry retained before kept, if one was (that entry is freed for
    /// good).
    #[inline]
    pub(crate) fn remove_retaining(&mut self, key: u32, vacant_place: u16) -> Option<T> {
        let node = &mut self.nodes[key as usize];
        debug_assert!(
            node.value.is_some(),
            "tickless-timer: removing a vacant entry"
        );
        node.generation = node.generation.wrapping_add(1);
        node.place = vacant_place;
        node.next = NIL;
        node.prev = NIL;
        self.len -= 1;
        if self.retained == NIL {
            self.retained = key;
            return None;
        }
        let released = self.take_retained();
        self.retained = key;
        released
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;
    use std::task::Waker;

    #[test]
    fn a_pending_waker_costs_at_most_64_bytes() {
        assert!(
            size_of::<Node<Waker>>() <= 64,
            "{}",
            size_of::<Node<Waker>>()
        );
        assert!(
            size_of::<Node<Waker>>() <= 40,
            "{}",
            size_of::<Node<Waker>>()
        );
    }

    #[test]
    fn stale_handle_misses_reused_entry() {
        let mut slab = Slab::with_capacity(1);
        let (k, h1) = slab.insert(1, 0, 0, "a");
        assert_eq!(slab.remove(k, 0), "a");
        let (k2, h2) = slab.insert(2, 0, 0, "b");
        assert_eq!(k, k2);
        assert_ne!(h1, h2);
        assert_eq!(slab.key_of(h1), None);
        assert_eq!(slab.key_of(h2), Some(k));
    }

    #[test]
    fn a_retained_value_is_reused_once_and_its_old_handle_stays_stale() {
        let mut slab = Slab::with_capacity(2);
        let (ka, ha) = slab.insert(1, 0, 0, "a");
        let (kb, hb) = slab.insert(1, 0, 0, "b");
        assert_eq!(slab.remove_retaining(ka, 0), None);
        assert_eq!(
            (slab.len(), slab.key_of(ha), slab.retained()),
            (1, None, Some(&"a"))
        );
        // A second retained entry releases the first, which goes back to the free list.
        assert_eq!(slab.remove_retaining(kb, 0), Some("a"));
        assert_eq!((slab.key_of(hb), slab.retained()), (None, Some(&"b")));
        let (kc, hc) = slab.insert(2, 0, 0, "c");
        assert_eq!(kc, ka, "the released entry is free again");
        let (kd, hd) = slab.reoccupy(3, 0, 0);
        assert_eq!((kd, slab.retained(), slab.len()), (kb, None, 2));
        assert_ne!(hd, hb);
        assert_eq!(slab.key_of(hb), None);
        assert_eq!(slab.remove(kd, 0), "b");
        assert_eq!(slab.remove(kc, 0), "c");
        assert_eq!(slab.key_of(hc), None);
        assert_eq!(slab.take_retained(), None);
    }
}
