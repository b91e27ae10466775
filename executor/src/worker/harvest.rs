//! Harvesting: a core that runs takes the ready I/O of a peer that has not come back to its
//! loop for a while (its thread inside a long poll, or kept off its CPU by the kernel), and
//! runs the `Send` tasks it wakes.
//!
//! A core's readiness is otherwise read by its own thread alone, so while that thread cannot
//! run, every connection registered with it waits. Here a core that runs looks, at its parks
//! and its fairness polls, at each peer's poll word (`Watch::progress`: it moves at every task
//! poll's start and end). A word that has not moved for [`Builder::harvest_after`] means the
//! peer has not been through its loop since: the core takes the peer's reactor key, fetches
//! the events ready in its epoll set and dispatches them (`tickless_io`'s `Harvester`), then
//! wakes the tasks they concern as *harvested*: a `Send` task of that peer moves here at the
//! wake, with its books (`task::spawn::schedule_away`), and its streams and timers follow at
//! its next poll, by the rules every move follows; `spawn_local` and `spawn_pinned` tasks are
//! queued on their own core, which runs them when it comes back.
//!
//! A parked core learns of a stuck peer from the stall detector's watchdog, which, when it
//! finds a core in the same poll at two checks in a row (half a stall threshold apart;
//! `runtime::watchdog`), marks that poll's word on the core (`Watch::stuck`) and wakes one
//! sleeping core, which harvests the marked core at once. With the detector off, only cores
//! that run harvest.
//!
//! # Cost
//!
//! Nothing on the same-core path: the look is made where the core parks (after a clock
//! reading it takes anyway) and at its fairness polls (every 61 tasks or more), one relaxed
//! load per peer; a clock reading at a fairness poll only when some peer's word has not
//! moved since the last look. A peer that has published that it sleeps is never harvested:
//! the kernel wakes its thread when its I/O is ready, and a harvest would take the events of
//! its local tasks and its own timer only to wake it from here. (So a sleeping peer whose
//! thread, woken, waits for a CPU is left to the kernel.) Each look at a peer counts in
//! `CoreStats::harvest_looks`; a look that took events counts in `harvests`.
//!
//! [`Builder::harvest_after`]: crate::Builder::harvest_after

use std::cell::Cell;
use std::mem;

use super::harvest_state::{Harvest, Seen};
use super::shared::Shared;
use super::{bump, Core};
use crate::catch::wake_caught;
use crate::sync::lock;

thread_local! {
    /// The index of the core whose I/O this thread is harvesting now, plus one (0: none).
    static HARVESTING: Cell<usize> = const { Cell::new(0) };
}

/// While it lives, the wakes on this thread are a harvest's of core `index`'s I/O: a `Send`
/// task of that core that they wake moves to the current core (`worker::harvest`).
pub struct Harvesting(());

impl Harvesting {
    /// Marks the wakes from now until the drop as harvested from core `index`.
    pub fn from(index: usize) -> Harvesting {
        HARVESTING.with(|h| h.set(index + 1));
        Harvesting(())
    }

    /// Whether the wake in progress on this thread is a harvest's of core `index`.
    #[inline]
    pub(crate) fn is_from(index: usize) -> bool {
        HARVESTING.try_with(Cell::get) == Ok(index + 1)
    }
}

impl Drop for Harvesting {
    fn drop(&mut self) {
        HARVESTING.with(|h| h.set(0));
    }
}

impl Core {
    /// Harvests every peer whose poll word has not moved for `harvest_after`, `now` being a
    /// clock reading taken at or before this call (`None`: read one if a peer's word has not
    /// moved since the last look).
    /// Returns whether it queued tasks here.
    pub(crate) fn harvest_peers(&self, now: Option<u64>) -> bool {
        let Some(h) = &self.harvest else {
            return false;
        };
        // A core that stepped back (crowded CPUs) takes no work from the others.
        if self.stepped_back.get() {
            return false;
        }
        let Some(cores) = self.peers.all() else {
            return false;
        };
        if cores.len() < 2 || self.timers.clock().is_paused() {
            return false;
        }
        let me = self.id().index;
        let mut now = now;
        let mut queued = false;
        for (index, peer) in cores.iter().enumerate() {
            // A peer that sleeps is woken by the kernel when its I/O is ready: taking its
            // events would only cost it a wake from here for its local tasks and timers.
            if index == me || peer.is_parked() {
                continue;
            }
            let word = peer.watch.progress();
            let due = {
                let mut seen = h.seen.borrow_mut();
                if seen.len() < cores.len() {
                    seen.resize(cores.len(), Seen::default());
                }
                let s = &mut seen[index];
                if s.word != word {
                    let since = now.unwrap_or_else(|| self.timers.last_now());
                    *s = Seen { word, since };
                    // New to this core, but the watchdog found the peer in this very poll at
                    // two checks (it woke this core to say so): due at once.
                    peer.watch.stuck() == word
                } else {
                    let at = *now.get_or_insert_with(|| self.timers.clock().now());
                    // At most one look per `after` at a peer that stays stuck.
                    let due = at.saturating_sub(s.since) >= h.after;
                    if due {
                        s.since = at;
                    }
                    due
                }
            };
            if due {
                queued |= self.harvest_from(h, peer, index);
            }
        }
        queued
    }

    /// Takes `peer`'s ready events and wakes the tasks they concern as harvested (see the
    /// module's doc); returns whether that queued tasks here.
    #[inline(never)]
    fn harvest_from(&self, h: &Harvest, peer: &Shared, index: usize) -> bool {
        // A clone (an `Arc`), so that the lock is not held while harvesting.
        let Some(harvester) = lock(&peer.harvester).clone() else {
            return false;
        };
        bump(&h.looks);
        let mut wake = mem::take(&mut *h.wake.borrow_mut());
        let taken = harvester.harvest(&mut wake);
        let queued_before = self.counters.queued.get();
        if let Some(events) = taken.filter(|&n| n > 0) {
            bump(&h.harvests);
            h.events.set(h.events.get() + events as u64);
            let _harvesting = Harvesting::from(index);
            while let Some(waker) = wake.pop_front() {
                wake_caught(waker);
            }
        }
        *h.wake.borrow_mut() = wake;
        self.counters.queued.get() != queued_before
    }
}
