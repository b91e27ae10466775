//! A core's run queue: its runnable tasks, which its own thread pushes and pops with no atomic
//! read-modify-write and no fence, and which another core may take the `Send` ones of while
//! the owner is away from it (inside a long poll, or its thread off its CPU).
//!
//! # Protocol
//!
//! Two flags and an asymmetric barrier (Dekker's mutual exclusion, with the fence moved to the
//! rare side). `busy` is written by the owner alone: `true` for the length of each access
//! ([`RunQueue::owner`] to the guard's drop). `claim` is a thief's: set with a swap (one thief
//! at a time), cleared when it is done or gives up.
//!
//! - Owner: `busy = true`, a compiler fence, then reads `claim`; if set, it clears `busy` and
//!   waits for the thief to finish (a bounded moment: the thief moves pointers, runs no user
//!   code), then tries again. Two plain stores and a load on x86: what a `RefCell` borrow costs.
//! - Thief: `claim = true` (a swap), then the heavy barrier ([`heavy_barrier`]: the
//!   `membarrier` system call, which makes every running thread of the process execute a full
//!   fence, and a thread off its CPU has one in its context switch), then reads `busy`: set, it
//!   clears `claim` and leaves the queue alone; clear, the queue is its until it clears `claim`.
//!
//! The barrier orders the owner's store of `busy` before its load of `claim` as a fence of
//! its own would: either the owner's fence point comes before the thief's barrier, and the
//! thief sees `busy` (or the owner's access finished, released by its store of `false`), or it
//! comes after, and the owner sees `claim`. So the owner and a thief are never inside the
//! queue at once, and a task is taken by exactly one of them: never run twice, never lost.
//! Under loom both sides are a `SeqCst` fence, the barrier's meaning;
//! `loom-tests/tests/steal_runq.rs` runs this code, owner pops and pushes against a thief.
//!
//! When the kernel has no private expedited `membarrier` (before 4.14, or a seccomp filter that
//! forbids it), [`heavy_barrier_available`] is false and no thief touches a run queue.

use std::cell::Cell;
use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};

use crate::sync::{AtomicBool, MutPtr, Ordering, UnsafeCell};

/// A core's run queue (see the module's protocol).
pub struct RunQueue<T> {
    /// The tasks, oldest first. The owner's, but while a thief holds `claim` with `busy`
    /// clear.
    tasks: UnsafeCell<VecDeque<T>>,
    /// Whether the owner is inside an access. Written by the owner alone.
    busy: AtomicBool,
    /// Whether a thief holds the queue, or is asking for it.
    claim: AtomicBool,
    /// Whether the owner has queued a `Send` task behind another since it last went idle (or
    /// a thief last held the queue): a thief watches the owner's poll word only while this is
    /// set (`worker::steal`). Set by the owner, cleared by the owner as it goes idle or by a
    /// thief under its claim; a hint.
    queued_behind: AtomicBool,
}

// SAFETY: the tasks are reached by the owner, or by a thief that holds the claim while the
// owner is out (the module's protocol): never by two threads at once. A thief moves tasks
// within the queue, or takes the `Send` ones; the `!Send` ones (`spawn_local`'s `Runnable`s,
// `Send` to the type system because async-task's `Runnable` is) it only moves from one slot
// to another, never runs nor drops.
unsafe impl<T: Send> Sync for RunQueue<T> {}

impl<T> Default for RunQueue<T> {
    fn default() -> Self {
        RunQueue {
            tasks: UnsafeCell::new(VecDeque::new()),
            busy: AtomicBool::new(false),
            claim: AtomicBool::new(false),
            queued_behind: AtomicBool::new(false),
        }
    }
}

/// The owner's access to its run queue, until dropped; it leaves the queue's length in the
/// owner's mirror as it ends.
pub struct Owned<'a, T> {
    /// The queue.
    queue: &'a RunQueue<T>,
    /// The tasks, while the access lasts.
    tasks: MutPtr<VecDeque<T>>,
    /// The owner's mirror of the length: exact as an access ends, an upper bound after (the
    /// owner alone adds; thieves only take), so that the owner's "anything queued?" is a
    /// plain load, and an empty queue is never entered.
    mirror: &'a Cell<usize>,
}

impl<T> RunQueue<T> {
    /// Owner side: the queue, until the guard drops (no other owner access may be open: as a
    /// `RefCell`'s `borrow_mut`), which leaves its length in `len`.
    #[inline]
    pub fn owner<'a>(&'a self, len: &'a Cell<usize>) -> Owned<'a, T> {
        // A nested access would let a thief in when the inner one ends.
        #[cfg(all(debug_assertions, not(loom)))]
        assert!(
            !self.busy.load(Ordering::Relaxed),
            "tickless: a run queue entered twice by its owner"
        );
        self.busy.store(true, Ordering::Relaxed);
        light_barrier();
        // Acquire: a thief that just left released what it changed.
        if self.claim.load(Ordering::Acquire) {
            self.wait_for_thief();
        }
        Owned {
            queue: self,
            tasks: self.tasks.get_mut(),
            mirror: len,
        }
    }

    /// Owner side: a thief holds or asks for the queue: steps out (`busy` clear) until it is
    /// gone, then in again.
    #[cold]
    #[inline(never)]
    fn wait_for_thief(&self) {
        loop {
            self.busy.store(false, Ordering::Release);
            while self.claim.load(Ordering::Acquire) {
                crate::sync::yield_now();
            }
            self.busy.store(true, Ordering::Relaxed);
            light_barrier();
            if !self.claim.load(Ordering::Acquire) {
                return;
            }
        }
    }

    /// Owner side: a `Send` task was queued behind another (`true`), or the owner goes idle
    /// with its queue empty (`false`). A store only when it changes; returns whether it did.
    #[inline]
    pub fn set_queued_behind(&self, queued: bool) -> bool {
        let changed = self.queued_behind.load(Ordering::Relaxed) != queued;
        if changed {
            self.queued_behind.store(queued, Ordering::Relaxed);
        }
        changed
    }

    /// Whether `Send` tasks may wait in the queue behind the owner's current poll (a hint: see
    /// `queued_behind`).
    #[inline]
    pub fn has_queued_behind(&self) -> bool {
        self.queued_behind.load(Ordering::Relaxed)
    }

    /// Thief side: if no other thief holds the queue and the owner is not inside it, `take`
    /// has the tasks to itself (and `queued_behind` is cleared: what the owner queues behind
    /// another after this says so again); returns what it returned. `None`: the queue was
    /// busy (try again later), or the system has no heavy barrier
    /// ([`heavy_barrier_available`]).
    pub fn steal<R>(&self, take: impl FnOnce(&mut VecDeque<T>) -> R) -> Option<R> {
        if !heavy_barrier_available() || self.claim.swap(true, Ordering::Acquire) {
            return None;
        }
        heavy_barrier();
        // Acquire: an owner access that ended released what it changed.
        if self.busy.load(Ordering::Acquire) {
            self.claim.store(false, Ordering::Release);
            return None;
        }
        self.queued_behind.store(false, Ordering::Relaxed);
        let out = {
            let tasks = self.tasks.get_mut();
            // SAFETY: the claim is ours and the owner is out (the module's protocol): nobody
            // else reaches the tasks until the claim is cleared, after `tasks` goes.
            take(unsafe { tasks.deref() })
        };
        self.claim.store(false, Ordering::Release);
        Some(out)
    }
}

impl<T> Deref for Owned<'_, T> {
    type Target = VecDeque<T>;

    #[inline]
    fn deref(&self) -> &VecDeque<T> {
        // SAFETY: the owner is inside the queue (`busy`) and no thief holds it (`owner`'s
        // check): no other thread reaches the tasks while this guard lives.
        unsafe { self.tasks.deref() }
    }
}

impl<T> DerefMut for Owned<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut VecDeque<T> {
        // SAFETY: as `deref`.
        unsafe { self.tasks.deref() }
    }
}

impl<T> Drop for Owned<'_, T> {
    #[inline]
    fn drop(&mut self) {
        let len = self.len();
        self.mirror.set(len);
        // Release: a thief that sees the owner out sees what it changed.
        self.queue.busy.store(false, Ordering::Release);
    }
}

/// Takes every task `keep` refuses, in order, into `into`, leaving the others where they were
/// (in order too); returns how many it took. What a thief does with a stuck core's queue.
pub fn take_unless<T>(
    tasks: &mut VecDeque<T>,
    into: &mut Vec<T>,
    mut keep: impl FnMut(&T) -> bool,
) -> usize {
    let before = into.len();
    for _ in 0..tasks.len() {
        let Some(task) = tasks.pop_front() else { break };
        if keep(&task) {
            tasks.push_back(task);
        } else {
            into.push(task);
        }
    }
    into.len() - before
}

/// The owner's side of the barrier: orders nothing on the CPU (the thief's
/// [`heavy_barrier`] does), only keeps the compiler from moving the load of `claim` above the
/// store of `busy`. Under loom, a `SeqCst` fence: the barrier's meaning.
#[inline(always)]
fn light_barrier() {
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    #[cfg(loom)]
    crate::sync::fence(Ordering::SeqCst);
}

/// The thief's side: a full fence on every CPU that runs a thread of the process
/// (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`). Under loom, a `SeqCst` fence.
fn heavy_barrier() {
    #[cfg(not(loom))]
    {
        // SAFETY: `membarrier` takes no pointers; registered by `heavy_barrier_available`.
        let r = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) };
        // Registered before any thief calls it, and the command takes no argument that could
        // be wrong: a failure is a broken invariant.
        assert!(
            r == 0,
            "tickless: membarrier failed after its registration: {}",
            std::io::Error::last_os_error()
        );
    }
    #[cfg(loom)]
    crate::sync::fence(Ordering::SeqCst);
}

/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED` (linux/membarrier.h).
#[cfg(not(loom))]
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
/// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED` (linux/membarrier.h).
#[cfg(not(loom))]
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

/// Whether thieves may use [`heavy_barrier`]: the process registered for private expedited
/// `membarrier`, once, at the first call (a runtime with several cores calls it when it is
/// built, before any thief runs).
pub fn heavy_barrier_available() -> bool {
    #[cfg(not(loom))]
    {
        static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVAILABLE.get_or_init(|| {
            // SAFETY: `membarrier` takes no pointers.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_membarrier,
                    MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                    0,
                )
            };
            r == 0
        })
    }
    #[cfg(loom)]
    true
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::cell::Cell;
    use std::collections::VecDeque;

    use super::{heavy_barrier_available, take_unless, RunQueue};

    #[test]
    fn a_thief_takes_what_the_owner_is_out_of_and_leaves_the_rest_in_order() {
        let q = RunQueue::default();
        let len = Cell::new(0);
        q.owner(&len).extend([1, 2, 3, 4, 5]);
        assert_eq!(len.get(), 5, "the mirror follows");
        if !heavy_barrier_available() {
            assert_eq!(q.steal(|_| ()), None, "no barrier, no thief");
            return;
        }
        let mut odd = Vec::new();
        let taken = q.steal(|tasks| take_unless(tasks, &mut odd, |t| t % 2 == 0));
        assert_eq!(taken, Some(3));
        assert_eq!(odd, [1, 3, 5]);
        assert_eq!(len.get(), 5, "an upper bound: the thief does not write it");
        assert_eq!(*q.owner(&len), VecDeque::from([2, 4]));
        assert_eq!(len.get(), 2);
    }

    #[test]
    fn a_thief_leaves_a_queue_the_owner_is_inside() {
        let q = RunQueue::<i32>::default();
        let len = Cell::new(0);
        let inside = q.owner(&len);
        assert_eq!(q.steal(|_| ()), None);
        drop(inside);
        assert_eq!(q.steal(|_| ()).is_some(), heavy_barrier_available());
    }
}
