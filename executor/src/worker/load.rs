//! A core's load, as placement (`worker::placement`) compares it: tasks spawned onto the core
//! and not yet finished, in a counter of the core's shared half that any thread may read.

use crate::sync::{AtomicUsize, Ordering};

/// A core's load, as placement compares it: tasks spawned onto it (from any thread) and not
/// yet finished.
///
/// Two words, so that the core's own spawns and finishes, the common case, are plain stores
/// (it is their only writer) and only a spawn from another thread pays an atomic add.
#[derive(Default)]
pub(crate) struct Load {
    /// Tasks other threads spawned onto the core (placed spawns, `Handle::spawn`).
    remote: AtomicUsize,
    /// Tasks the core spawned on itself less every task of the core that finished (wrapping:
    /// remote tasks finish here too). Written by the core alone.
    own: AtomicUsize,
}

impl Load {
    /// The core spawned a task on itself. Core side only.
    #[inline]
    pub(crate) fn add_own(&self) {
        self.step_own(1);
    }

    /// Another thread spawned a task onto the core.
    #[inline]
    pub(crate) fn add_remote(&self) {
        self.remote.fetch_add(1, Ordering::Relaxed);
    }

    /// A task of the core finished (its future was dropped after it was polled, or a deferred
    /// start was aborted). Core side only.
    #[inline]
    pub(crate) fn remove(&self) {
        self.step_own(usize::MAX); // wrapping -1
    }

    /// Moves the core's own word by `delta` (wrapping): a load and a store, not an atomic
    /// read-modify-write, since no other thread writes it.
    #[inline]
    fn step_own(&self, delta: usize) {
        let own = self.own.load(Ordering::Relaxed);
        self.own.store(own.wrapping_add(delta), Ordering::Relaxed);
    }

    /// The current value (a hint: others change it meanwhile).
    #[inline]
    pub(crate) fn get(&self) -> usize {
        // The two words are read apart: a remote task added and finished in between could
        // make the sum wrap below zero; it is a hint, so it stops at zero.
        let own = self.own.load(Ordering::Relaxed) as isize;
        let remote = self.remote.load(Ordering::Relaxed) as isize;
        own.wrapping_add(remote).max(0) as usize
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Load;

    #[test]
    fn the_load_counts_spawns_from_both_sides_less_the_finished_ones() {
        let load = Load::default();
        load.add_own();
        load.add_own();
        load.add_remote();
        assert_eq!(load.get(), 3);
        // Remote tasks finish on the core: its own word goes below zero, the sum does not.
        load.remove();
        load.remove();
        load.remove();
        assert_eq!(load.get(), 0);
        load.add_remote();
        assert_eq!(load.get(), 1);
    }

    #[test]
    fn a_sum_read_below_zero_stops_at_zero() {
        let load = Load::default();
        // A remote task finished, its add not seen: the hint is 0, not a wrapped huge value.
        load.remove();
        assert_eq!(load.get(), 0);
    }
}
