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
//! the task's wrapper in the current-core look-up it makes anyway: its id and spawn location
//! (and a named task's, two more: its name and, to say whose name it is, its id again);
//! the `block_on` future's poll adds one, clearing the id. Nothing clears the id when a task's
//! poll ends: a reader looks at it only while the poll word says a poll runs. All of it is on
//! a line no other thread writes. The watchdog reads the words once per check (see
//! `runtime::watchdog`). What the watchdog's sleep costs a core is one fence and one load each
//! time it wakes from a park (see [`Kennel`]).
//!
//! # tokio's turns
//!
//! With the tokio context (`worker/tokio_context.rs`), the core's thread also runs tokio's
//! tasks, inside tokio's `block_on`: each stretch of it, from entering `block_on` (or tokio's
//! waking from its park) to leaving it (or tokio's parking), is one poll of the word, marked
//! as tokio's ([`tokio_runs`](Watch::tokio_runs), [`tokio_rests`](Watch::tokio_rests), called
//! from tokio's `on_thread_unpark` and `on_thread_park` hooks and around its `block_on`).
//! Time parked in tokio is no poll: the core is idle there. tickless cannot tell tokio's tasks
//! apart (tokio has no stable per-task poll hook): a stall there is reported as tokio's.
//!
//! These atomics are `std`'s, not `crate::sync`'s: only the watchdog and a signal handler read
//! them, and neither is part of a protocol the loom models check; except `active` and
//! `in_tokio`, which are part of the kennel's (`kennel.rs`,
//! `loom-tests/tests/watchdog_kennel.rs`).

use std::panic::Location;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

use super::kennel::Kennel;
use crate::stall::Polled;
use crate::sync;
use crate::task::hooks::Hooks;
use crate::task::id::{Id, Meta};

/// `false` only in a build made with `RUSTFLAGS="--cfg tickless_unwatched"`, to measure what
/// the observers cost (`python3 benches/scripts/observer_cost.py`): the hot path's poll word,
/// task id and watchdog rousing are skipped there, so its stall detector, harvesting, stealing
/// of a stuck core and poll counts do not work. Never set in a build anyone runs.
pub(crate) const WATCHED: bool = !cfg!(tickless_unwatched);

/// A core's poll in progress, and its runtime's hooks.
#[derive(Default)]
pub struct Watch {
    /// Polls started plus polls ended: odd while a poll runs, and then a number no other
    /// poll of the core has. Two readings a threshold apart that show the same odd number are
    /// one poll that has run at least that long. Only the core writes it.
    poll: AtomicU64,
    /// The id of the task being polled ([`Id::as_u64`]); 0 while the `block_on` future is,
    /// [`TOKIO`] while tokio's runtime runs. Stale (the last poll's) between polls: read it
    /// only while `poll` is odd.
    task: AtomicU64,
    /// Where that task was spawned; null before the first task poll. Stale as `task`, and
    /// the last task's while the `block_on` future is polled: read it only with a non-zero
    /// `task`.
    at: AtomicPtr<Location<'static>>,
    /// The id of the last named task polled (0: none), whose name `name` holds: a task's
    /// name is its only while this is its id (an unnamed task's poll stores neither).
    named: AtomicU64,
    /// That task's name (interned: `task::name`); null before the first named task's poll.
    name: AtomicPtr<&'static str>,
    /// Whether a thread runs the core's loop now (its own thread; for core 0, the thread in
    /// `block_on`). A core nobody runs is idle to the watchdog.
    active: sync::AtomicBool,
    /// Whether tokio's runtime runs on the core's thread now (out of its park): the core is
    /// not idle to the watchdog then, though its sleep word says it sleeps (it parks in tokio).
    in_tokio: sync::AtomicBool,
    /// The kernel id of the thread that runs (or last ran) the loop: where the watchdog sends
    /// the signal that takes a stalled thread's backtrace.
    tid: AtomicI32,
    /// The poll word the watchdog found at two checks in a row (0: none), for a core that
    /// harvests to take this core's ready I/O at once (`worker::harvest`).
    stuck: AtomicU64,
    /// Times the core stepped back because the CPUs were crowded (`runtime::crowding`).
    yields: AtomicU64,
    /// Polls reported as stalls.
    stalls: AtomicU64,
    /// Polls past the threshold whose thread was preempted (`stall::sched`), not reported.
    preemptions: AtomicU64,
    /// Times the core woke the watchdog from its kennel.
    rouses: AtomicU64,
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
        if !WATCHED {
            return;
        }
        if let Some(kennel) = &self.kennel {
            if kennel.rouse() {
                self.rouses.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Whether the core is idle to the watchdog: nobody runs its loop, or it `sleeps` (its
    /// inbox's sleep word) and tokio's runtime does not run on its thread either.
    pub(crate) fn is_idle(&self, sleeps: bool) -> bool {
        (sleeps && !self.in_tokio.load(sync::Ordering::Relaxed))
            || !self.active.load(sync::Ordering::Relaxed)
    }

    /// tokio's runtime starts running on the core's thread (entering its `block_on`, or
    /// waking from its park): a poll starts, tokio's; the core is not idle, and a watchdog
    /// that sleeps is woken (`in_tokio` is what the kennel's protocol publishes, see
    /// [`Kennel`]).
    #[cfg_attr(not(feature = "tokio-compat"), allow(dead_code))]
    pub fn tokio_runs(&self) {
        self.task.store(TOKIO, Ordering::Relaxed);
        if self.poll.load(Ordering::Relaxed) & 1 == 0 {
            bump(&self.poll);
        }
        self.in_tokio.store(true, sync::Ordering::Relaxed);
        self.woke();
    }

    /// tokio's runtime stops running on the core's thread (it parks, or its `block_on`
    /// returns): its poll ends.
    #[cfg_attr(not(feature = "tokio-compat"), allow(dead_code))]
    pub fn tokio_rests(&self) {
        if self.poll.load(Ordering::Relaxed) & 1 == 1 {
            bump(&self.poll);
        }
        self.in_tokio.store(false, sync::Ordering::Relaxed);
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

    /// Counts a step back (`runtime::crowding`).
    pub(crate) fn count_yield(&self) {
        self.yields.fetch_add(1, Ordering::Relaxed);
    }

    /// Times the core stepped back so far.
    pub(crate) fn yields(&self) -> u64 {
        self.yields.load(Ordering::Relaxed)
    }

    /// Counts a stall.
    pub(crate) fn count_stall(&self) {
        self.stalls.fetch_add(1, Ordering::Relaxed);
    }

    /// Stalls reported so far.
    pub(crate) fn stalls(&self) -> u64 {
        self.stalls.load(Ordering::Relaxed)
    }

    /// Counts a poll past the threshold whose thread was preempted.
    pub(crate) fn count_preemption(&self) {
        self.preemptions.fetch_add(1, Ordering::Relaxed);
    }

    /// Preempted polls counted so far.
    pub(crate) fn preemptions(&self) -> u64 {
        self.preemptions.load(Ordering::Relaxed)
    }

    /// Times the core woke the watchdog so far.
    pub(crate) fn rouses(&self) -> u64 {
        self.rouses.load(Ordering::Relaxed)
    }

    /// A poll starts (the word becomes odd).
    #[inline]
    pub(crate) fn poll_starts(&self) {
        if WATCHED {
            bump(&self.poll);
        }
    }

    /// The `block_on` future's poll starts: no task's id is published while it runs.
    #[inline]
    pub(crate) fn main_poll_starts(&self) {
        if !WATCHED {
            return;
        }
        self.task.store(0, Ordering::Relaxed);
        bump(&self.poll);
    }

    /// The poll has ended (the word becomes even). The task's id stays: it is read only
    /// while a poll runs.
    #[inline]
    pub(crate) fn poll_ends(&self) {
        if WATCHED {
            bump(&self.poll);
        }
    }

    /// Polls started so far (the one running now included).
    pub(crate) fn polls(&self) -> u64 {
        self.poll.load(Ordering::Relaxed).div_ceil(2)
    }

    /// The poll running now is `task`'s.
    #[inline]
    pub(crate) fn task_starts(&self, task: &Meta) {
        if !WATCHED {
            return;
        }
        let at: *const Location<'static> = task.at;
        if let Some(name) = task.name {
            self.name
                .store(std::ptr::from_ref(name).cast_mut(), Ordering::Relaxed);
            self.named.store(task.id.as_u64(), Ordering::Relaxed);
        }
        // Release: a reader that sees the id sees the location stored before it.
        self.at.store(at.cast_mut(), Ordering::Relaxed);
        self.task.store(task.id.as_u64(), Ordering::Release);
    }

    /// The id of the task being polled, if one is.
    pub(crate) fn task_id(&self) -> Option<Id> {
        if self.poll.load(Ordering::Relaxed) & 1 == 0 {
            return None;
        }
        Id::from_u64(self.task.load(Ordering::Relaxed)).filter(|id| id.as_u64() != TOKIO)
    }

    /// The poll running now (its number, 0 between polls), and what it polls: what the
    /// watchdog samples.
    /// The poll word: it moves at every poll's start and end, so a reading that has not moved
    /// over a while means the core has not been through its loop since (a long poll, or a
    /// thread kept off its CPU; or a core that sleeps). One relaxed load, for harvesting
    /// (`worker::harvest`).
    #[inline]
    pub(crate) fn progress(&self) -> u64 {
        self.poll.load(Ordering::Relaxed)
    }

    /// The watchdog found the poll of word `poll` at two checks in a row: the core has not
    /// come back to its loop since (see [`stuck`](Self::stuck)).
    pub(crate) fn mark_stuck(&self, poll: u64) {
        self.stuck.store(poll, Ordering::Relaxed);
    }

    /// The poll word the watchdog last found at two checks in a row (0: none): the core is
    /// stuck while [`progress`](Self::progress) still reads it.
    #[inline]
    pub(crate) fn stuck(&self) -> u64 {
        self.stuck.load(Ordering::Relaxed)
    }

    pub(crate) fn sample(&self) -> (u64, Polled) {
        let poll = self.poll.load(Ordering::Relaxed);
        if poll & 1 == 0 {
            return (0, Polled::BlockOn);
        }
        let task = self.task.load(Ordering::Acquire);
        if task == TOKIO {
            return (poll, Polled::Tokio);
        }
        let at = self.at.load(Ordering::Relaxed);
        let name = if self.named.load(Ordering::Relaxed) == task {
            self.name.load(Ordering::Relaxed)
        } else {
            std::ptr::null_mut()
        };
        let meta = Id::from_u64(task).filter(|_| !at.is_null()).map(|id| Meta {
            id,
            // SAFETY: `at` is non-null, so it was stored by `task_starts` from a
            // `&'static Location`: valid for the whole program, and never written through.
            at: unsafe { &*at },
            // SAFETY: a non-null `name` was stored by `task_starts` from an interned
            // `&'static &'static str` (`task::name`), valid for the whole program and
            // never written through. (Read against another poll's id it may be another
            // task's name, never an invalid one.)
            name: unsafe { name.as_ref() },
        });
        (poll, meta.map_or(Polled::BlockOn, Polled::Task))
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
        watch.in_tokio.store(false, sync::Ordering::Relaxed);
        watch.active.store(false, sync::Ordering::Relaxed);
    }
}

/// The task word while tokio's runtime runs: no task id (ids count up from 1, and 2^64 of
/// them would take centuries).
const TOKIO: u64 = u64::MAX;

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
