//! What the runtime's observers see of a core, in its shared half: the poll in progress (which
//! task, spawned where: `task::id`, and the stall detector's watchdog on another thread), the
//! thread that runs the core, the stalls counted, and the task hooks the runtime was built
//! with, and the [`Kennel`] where the watchdog sleeps while every core does.
//!
//! # Cost
//!
//! A poll costs the core two increments of its poll word, one at the start and one at the
//! end (a plain load and store each, folded into one `inc` on x86: no read-modify-write, no
//! fence, no clock read), and these are the core's poll count too (`CoreStats::polls` is half
//! the word), so that nothing else counts polls. A task's poll adds two relaxed stores, by
//! the task's wrapper in the current-core look-up it makes anyway: its id and spawn location;
//! the `block_on` future's poll adds one, clearing the id. Nothing clears the id when a task's
//! poll ends: a reader looks at it only while the poll word says a poll runs. All of it is on
//! a line no other thread writes. The watchdog reads the words once per check (see
//! `runtime::watchdog`). What the watchdog's sleep costs a core is one fence and one load each
//! time it wakes from a park (see [`Kennel`]).
//!
//! These atomics are `std`'s, not `crate::sync`'s: only the watchdog and a signal handler read
//! them, and neither is part of a protocol the loom models check; except `active`, which is
//! part of the kennel's (`kennel.rs`, `loom-tests/tests/watchdog_kennel.rs`).

use std::panic::Location;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

use super::kennel::Kennel;
use crate::sync;
use crate::task::hooks::Hooks;
use crate::task::id::{Id, Meta};

/// A core's poll in progress, and its runtime's hooks.
#[derive(Default)]
pub struct Watch {
    /// Polls started plus polls ended: odd while a poll runs, and then a number no other
    /// poll of the core has. Two readings a threshold apart that show the same odd number are
    /// one poll that has run at least that long. Only the core writes it.
    poll: AtomicU64,
    /// The id of the task being polled ([`Id::as_u64`]); 0 while the `block_on` future is.
    /// Stale (the last poll's) between polls: read it only while `poll` is odd.
    task: AtomicU64,
    /// Where that task was spawned; null before the first task poll. Stale as `task`, and
    /// the last task's while the `block_on` future is polled: read it only with a non-zero
    /// `task`.
    at: AtomicPtr<Location<'static>>,
    /// Whether a thread runs the core's loop now (its own thread; for core 0, the thread in
    /// `block_on`). A core nobody runs is idle to the watchdog.
    active: sync::AtomicBool,
    /// The kernel id of the thread that runs (or last ran) the loop: where the watchdog sends
    /// the signal that takes a stalled thread's backtrace.
    tid: AtomicI32,
    /// Polls reported as stalls.
    stalls: AtomicU64,
    /// The runtime's task hooks; `None` when none is set (then a poll checks one word).
    pub(crate) hooks: Option<Arc<Hooks>>,
    /// Where the stall detector's watchdog sleeps; `None` with the detector off.
    kennel: Option<Arc<Kennel>>,
}

impl Watch {
    /// A core's, with the runtime's `hooks`, watched by the watchdog of `kennel` if any.
    pub(crate) fn new(hooks: Option<Arc<Hooks>>, kennel: Option<Arc<Kennel>>) -> Watch {
        Watch {
            hooks,
            kennel,
            ..Watch::default()
        }
    }

    /// A thread starts running the core's loop: it is the one to signal, and the core is no
    /// longer idle to the watchdog (woken if it sleeps). Returns the guard that ends it.
    pub fn enter(&self) -> Running<'_> {
        self.tid.store(this_tid(), Ordering::Relaxed);
        self.active.store(true, sync::Ordering::Relaxed);
        self.woke();
        Running(self)
    }

    /// The core has published that it runs again after a park: wakes the watchdog if it
    /// sleeps (a fence and a load; see [`Kennel`]).
    #[inline]
    pub(crate) fn woke(&self) {
        if let Some(kennel) = &self.kennel {
            kennel.rouse();
        }
    }

    /// Whether the core is idle to the watchdog: nobody runs its loop, or it `sleeps` (its
    /// inbox's sleep word).
    pub(crate) fn is_idle(&self, sleeps: bool) -> bool {
        sleeps || !self.active.load(sync::Ordering::Relaxed)
    }

    /// Whether a thread runs the core's loop now.
    pub(crate) fn is_active(&self) -> bool {
        self.active.load(sync::Ordering::Relaxed)
    }

    /// The kernel id of the thread that runs the loop.
    pub(crate) fn tid(&self) -> i32 {
        self.tid.load(Ordering::Relaxed)
    }

    /// The poll word itself, for the signal handler to check that the poll it was sent for
    /// is still running.
    pub(crate) fn poll_word(&self) -> &AtomicU64 {
        &self.poll
    }

    /// Counts a stall.
    pub(crate) fn count_stall(&self) {
        self.stalls.fetch_add(1, Ordering::Relaxed);
    }

    /// Stalls reported so far.
    pub(crate) fn stalls(&self) -> u64 {
        self.stalls.load(Ordering::Relaxed)
    }

    /// A poll starts (the word becomes odd).
    #[inline]
    pub(crate) fn poll_starts(&self) {
        bump(&self.poll);
    }

    /// The `block_on` future's poll starts: no task's id is published while it runs.
    #[inline]
    pub(crate) fn main_poll_starts(&self) {
        self.task.store(0, Ordering::Relaxed);
        bump(&self.poll);
    }

    /// The poll has ended (the word becomes even). The task's id stays: it is read only
    /// while a poll runs.
    #[inline]
    pub(crate) fn poll_ends(&self) {
        bump(&self.poll);
    }

    /// Polls started so far (the one running now included).
    pub(crate) fn polls(&self) -> u64 {
        self.poll.load(Ordering::Relaxed).div_ceil(2)
    }

    /// The poll running now is `task`'s.
    #[inline]
    pub(crate) fn task_starts(&self, task: &Meta) {
        let at: *const Location<'static> = task.at;
        // Release: a reader that sees the id sees the location stored before it.
        self.at.store(at.cast_mut(), Ordering::Relaxed);
        self.task.store(task.id.as_u64(), Ordering::Release);
    }

    /// The id of the task being polled, if one is.
    pub(crate) fn task_id(&self) -> Option<Id> {
        if self.poll.load(Ordering::Relaxed) & 1 == 0 {
            return None;
        }
        Id::from_u64(self.task.load(Ordering::Relaxed))
    }

    /// The poll running now (its number, 0 between polls), with its task's id and spawn
    /// location if it is a task's: what the watchdog samples.
    pub(crate) fn sample(&self) -> (u64, Option<Meta>) {
        let poll = self.poll.load(Ordering::Relaxed);
        if poll & 1 == 0 {
            return (0, None);
        }
        let task = Id::from_u64(self.task.load(Ordering::Acquire));
        let at = self.at.load(Ordering::Relaxed);
        let meta = task.filter(|_| !at.is_null()).map(|id| Meta {
            id,
            // SAFETY: `at` is non-null, so it was stored by `task_starts` from a
            // `&'static Location`: valid for the whole program, and never written through.
            at: unsafe { &*at },
        });
        (poll, meta)
    }
}

/// A thread runs the core's loop until this is dropped (unwinding included: a `block_on`
/// whose future panicked leaves no poll behind that looks stalled).
pub struct Running<'a>(&'a Watch);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let watch = self.0;
        // A poll left by an unwinding `block_on` future ends here.
        if watch.poll.load(Ordering::Relaxed) & 1 == 1 {
            bump(&watch.poll);
        }
        watch.active.store(false, sync::Ordering::Relaxed);
    }
}

/// Adds one to a word only this thread writes: a load and a store, no read-modify-write.
#[inline]
fn bump(word: &AtomicU64) {
    word.store(
        word.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Relaxed,
    );
}

/// This thread's kernel id, asked of the kernel once per thread (`block_on` may be called in a
/// loop).
fn this_tid() -> i32 {
    thread_local! {
        /// This thread's id; 0 until asked.
        static TID: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
    }
    TID.with(|tid| {
        if tid.get() == 0 {
            // SAFETY: `gettid` has no preconditions.
            tid.set(unsafe { libc::gettid() });
        }
        tid.get()
    })
}
