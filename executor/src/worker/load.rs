//! A core's load, as placement (`worker::placement`) compares it: the tasks that belong to the
//! core now (spawned onto it or moved to it, and not yet finished), in a counter of the core's
//! shared half that any thread may read.
//!
//! # Books
//!
//! A task is counted on exactly one core at a time: the core its metadata names as its home
//! (`TaskMeta::home`). It is added where it is spawned ([`Load::add_own`], [`Load::add_remote`]),
//! moved by whoever changes its home, at the change ([`move_tasks`]: a steal, core 0's
//! evacuation, a wake that re-homes it; before its first poll or after), and removed once,
//! from the core that holds it, when its future is dropped (`task::harness`: it finished, was
//! aborted, or was dropped at shutdown or by a closed core's refusal). Its first poll on a core
//! moves only its live-task entry, never its count. The core's own spawns and finishes stay
//! plain stores; a move pays one atomic add for each side not on the mover's thread.

use crate::sync::{AtomicUsize, Ordering};

/// A core's load, as placement compares it: tasks that belong to it now (spawned onto it from
/// any thread, or moved to it) and not yet finished.
///
/// Two words, so that the core's own spawns and finishes, the common case, are plain stores
/// (it is their only writer) and only another thread's spawn, move or drop pays an atomic add.
#[derive(Default)]
pub(crate) struct Load {
    /// Tasks other threads spawned onto the core (placed spawns, `Handle::spawn`) or moved to
    /// it, less those they moved away from it or dropped (wrapping). Any thread adds.
    remote: AtomicUsize,
    /// Tasks the core spawned on itself or took, less every task of the core that finished
    /// here or that it moved away (wrapping: remote tasks finish here too). Written by the
    /// core alone.
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

    /// A task of the core finished (its future was dropped on the core's thread). Core side
    /// only.
    #[inline]
    pub(crate) fn remove(&self) {
        self.step_own(usize::MAX); // wrapping -1
    }

    /// `n` tasks came to the core or left it (`n` wrapping: `0 - k` for `k` leaving), counted
    /// by the core itself (`own`: on the core's thread) or by another thread.
    #[inline]
    fn step(&self, n: usize, own: bool) {
        if own {
            self.step_own(n);
        } else {
            self.remote.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// A task of the core finished on another thread than the core's (dropped by a thread of
    /// no core, or by a core whose push a closed core refused).
    #[inline]
    pub(crate) fn remove_remote(&self) {
        self.step(usize::MAX, false);
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

/// `n` tasks move from the core of `from` to the core of `to`, counted by the thread that
/// moves them (see the module's books): each side on its own word if the mover runs that core
/// (`from_here`, `to_here`), with an atomic add otherwise.
#[inline]
pub(crate) fn move_tasks(from: &Load, from_here: bool, to: &Load, to_here: bool, n: usize) {
    if n == 0 || std::ptr::eq(from, to) {
        return;
    }
    from.step(n.wrapping_neg(), from_here);
    to.step(n, to_here);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{move_tasks, Load};

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
    fn a_moved_task_leaves_its_old_core_and_is_removed_from_its_new_one() {
        let (a, b) = (Load::default(), Load::default());
        a.add_own();
        a.add_own();
        // B's thread steals both: A's side atomically, B's own.
        move_tasks(&a, false, &b, true, 2);
        assert_eq!((a.get(), b.get()), (0, 2));
        // A's thread moves one back (an evacuation): its own word, B's remote one.
        move_tasks(&b, false, &a, true, 1);
        assert_eq!((a.get(), b.get()), (1, 1));
        // Moving to the same core changes nothing.
        move_tasks(&a, true, &a, true, 1);
        assert_eq!(a.get(), 1);
        // One finishes on A's thread, the other is dropped elsewhere.
        a.remove();
        b.remove_remote();
        assert_eq!((a.get(), b.get()), (0, 0));
    }

    #[test]
    fn a_sum_read_below_zero_stops_at_zero() {
        let load = Load::default();
        // A remote task finished, its add not seen: the hint is 0, not a wrapped huge value.
        load.remove();
        assert_eq!(load.get(), 0);
    }
}
