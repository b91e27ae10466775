//! A core's stealable queue: the runnable `Send` tasks its private queue has no room for, where
//! an idle core may take them when the owner has not run them for a while.
//!
//! The owner's run queue (`worker::runq`) costs a local wake no atomic read-modify-write: a
//! core keeps its first [`LOCAL_ROOM`] runnable tasks there and spills the rest here (a thief
//! takes the run queue's too, but only from a core stuck in one poll). A core
//! that keeps up never spills (a ping-pong, a server whose connections get a turn each before
//! more arrive), so it never touches this lock. A core with a backlog pays one uncontended lock
//! per spilled task and one per refill of its private queue, and exposes the backlog to the
//! others.
//!
//! # Protocol
//!
//! `queue` (a mutex) holds the tasks; `len` mirrors its length, written under the lock, so that
//! a thief's look is one relaxed load and an idle core scanning its peers touches no lock.
//! `since` is the instant (ns on the runtime's clock) the queue last went from empty to
//! non-empty, written under the lock by the pusher that made it so; a thief compares it with
//! its own clock reading to tell a backlog the owner is about to run from one it has not run
//! for a while (see [`Spill::steal_older_than`]). A task is in the queue, or taken by exactly
//! one thread (the owner's refill or one thief), under the lock: it is never run twice, and
//! never lost. A task being polled is not in the queue (the owner popped it first), so a
//! thief never takes one mid-poll. `loom-tests/tests/steal.rs` runs this queue against the
//! owner's refill and a wake of a stolen task.

use std::collections::VecDeque;

use crate::sync::{lock, AtomicU64, AtomicUsize, Mutex, Ordering};

/// How many runnable tasks a core keeps in its private queue before it spills `Send` ones.
pub(crate) const LOCAL_ROOM: usize = 16;

/// A core's stealable queue.
pub struct Spill<T> {
    /// The spilled tasks, oldest first.
    queue: Mutex<VecDeque<T>>,
    /// `queue`'s length, written under its lock.
    len: AtomicUsize,
    /// When `queue` last became non-empty (ns on the runtime's clock).
    since: AtomicU64,
}

impl<T> Default for Spill<T> {
    fn default() -> Self {
        Spill {
            queue: Mutex::new(VecDeque::new()),
            len: AtomicUsize::new(0),
            since: AtomicU64::new(0),
        }
    }
}

impl<T> Spill<T> {
    /// How many tasks wait here (a hint: others change it meanwhile).
    #[inline]
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether nothing waits here (a hint).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Owner side: queues `task` at the back; `now` is read only if the queue was empty (it
    /// stamps the backlog's start, and counts one more in `backlogs`, the runtime's count of
    /// non-empty spill queues). Returns whether the queue was empty.
    pub fn push(&self, task: T, now: impl FnOnce() -> u64, backlogs: &AtomicUsize) -> bool {
        let mut queue = lock(&self.queue);
        let was_empty = queue.is_empty();
        if was_empty {
            self.since.store(now(), Ordering::Relaxed);
            backlogs.fetch_add(1, Ordering::Relaxed);
        }
        queue.push_back(task);
        self.len.store(queue.len(), Ordering::Relaxed);
        was_empty
    }

    /// Owner side: moves up to `max` of the oldest tasks into `into`, in order; returns how
    /// many are left.
    pub fn refill(&self, into: &mut VecDeque<T>, max: usize, backlogs: &AtomicUsize) -> usize {
        let mut queue = lock(&self.queue);
        let n = queue.len().min(max);
        into.extend(queue.drain(..n));
        self.emptied(n, &queue, backlogs);
        queue.len()
    }

    /// After `n` tasks were taken under the lock: the length's mirror, and one backlog less if
    /// they were the last.
    fn emptied(&self, n: usize, queue: &VecDeque<T>, backlogs: &AtomicUsize) {
        self.len.store(queue.len(), Ordering::Relaxed);
        if n > 0 && queue.is_empty() {
            backlogs.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// When the backlog started (ns on the runtime's clock; meaningful while it is not empty).
    pub fn since(&self) -> u64 {
        self.since.load(Ordering::Relaxed)
    }

    /// Thief side: if the backlog started at least `age` ns before `now` (the thief's clock
    /// reading), takes half of it, at least one task, the oldest first, into `into`; returns
    /// how many. A younger backlog is left to its owner: `Err(since)`, when it started, so
    /// that the thief can look again once it is old enough.
    pub fn steal_older_than(
        &self,
        now: u64,
        age: u64,
        into: &mut Vec<T>,
        backlogs: &AtomicUsize,
    ) -> Result<usize, u64> {
        if self.is_empty() {
            return Ok(0);
        }
        let mut queue = lock(&self.queue);
        if queue.is_empty() {
            return Ok(0);
        }
        let since = self.since.load(Ordering::Relaxed);
        if now.saturating_sub(since) < age {
            return Err(since);
        }
        let n = queue.len().div_ceil(2);
        into.extend(queue.drain(..n));
        self.emptied(n, &queue, backlogs);
        if !queue.is_empty() {
            // What is left has waited since `since` too, but give the owner its turn at it: a
            // second thief (or this one, again) takes it only after another `age`.
            self.since.store(now, Ordering::Relaxed);
        }
        Ok(n)
    }

    /// Takes every task (at shutdown, or to hand them on, outside the lock).
    pub fn take_all(&self, backlogs: &AtomicUsize) -> VecDeque<T> {
        let mut queue = lock(&self.queue);
        let all = std::mem::take(&mut *queue);
        self.emptied(all.len(), &queue, backlogs);
        all
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::collections::VecDeque;

    use super::Spill;
    use crate::sync::{AtomicUsize, Ordering};

    #[test]
    fn a_young_backlog_is_left_to_its_owner_and_an_old_one_is_halved() {
        let spill = Spill::default();
        let backlogs = AtomicUsize::new(0);
        for i in 0..5 {
            spill.push(i, || 1_000, &backlogs);
        }
        assert_eq!(backlogs.load(Ordering::Relaxed), 1, "one backlog");
        let mut stolen = Vec::new();
        let steal =
            |now, stolen: &mut Vec<i32>| spill.steal_older_than(now, 1_000, stolen, &backlogs);
        assert_eq!(steal(1_500, &mut stolen), Err(1_000));
        assert!(stolen.is_empty());
        assert_eq!(steal(2_000, &mut stolen), Ok(3));
        assert_eq!(stolen, [0, 1, 2], "the oldest first");
        assert_eq!(spill.len(), 2);
        // The rest is young again for the next thief.
        assert_eq!(steal(2_500, &mut stolen), Err(2_000));
        let mut mine = VecDeque::new();
        assert_eq!(spill.refill(&mut mine, 8, &backlogs), 0, "none left");
        assert_eq!(mine, [3, 4]);
        assert!(spill.is_empty());
        assert_eq!(backlogs.load(Ordering::Relaxed), 0, "the backlog is gone");
        assert_eq!(steal(9_000, &mut stolen), Ok(0));
    }

    #[test]
    fn the_backlog_is_stamped_and_counted_when_it_starts_only() {
        let spill = Spill::default();
        let backlogs = AtomicUsize::new(0);
        assert!(spill.push(1, || 10, &backlogs));
        let unread = || panic!("the clock is read only for an empty queue");
        assert!(!spill.push(2, unread, &backlogs));
        assert_eq!(backlogs.load(Ordering::Relaxed), 1);
        assert_eq!(spill.take_all(&backlogs).len(), 2);
        assert!(spill.is_empty());
        assert_eq!(backlogs.load(Ordering::Relaxed), 0);
        assert_eq!(spill.take_all(&backlogs).len(), 0);
        assert_eq!(
            backlogs.load(Ordering::Relaxed),
            0,
            "an empty take counts nothing"
        );
    }
}
