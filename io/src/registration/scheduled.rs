//! The state a registration shares with its reactor: readiness, its tick, the waiters.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::task::{Context, Waker};

#[cfg(loom)]
use loom::sync::atomic::{AtomicU8, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU8, Ordering};

use super::level::Level;
use super::waiters::Waiters;
use crate::home::Home;
use crate::ready::{Direction, Ready, ReadyEvent};

/// The state a registration shares with its reactor's slab.
///
/// The reactor writes it while dispatching events; the I/O type reads and clears it while a
/// task polls. Both happen on the core's one thread, never at the same time.
///
/// It is shared through an `Arc` only so that a [`Registration`] can be sent to, and dropped
/// on, another thread; its cells are touched on the reactor's thread alone (see the `Send`
/// and `Sync` impls below).
pub(crate) struct ScheduledIo {
    /// Readiness reported by epoll and not yet disproved by a `WouldBlock`.
    ///
    /// Starts as readable and writable: a new descriptor is tried before anyone waits, and an
    /// edge-triggered registration of a ready descriptor still reports it on the next poll.
    pub(super) readiness: Cell<Ready>,
    /// Bumped on every event dispatched here; a clear applies only if it has not moved.
    tick: Cell<u32>,
    /// Tasks waiting to read (index 0) and to write (index 1, see [`Waiters::of`]); all the
    /// tasks of a direction are woken, and its list emptied, by readiness in that direction.
    /// One cell for both, so that an event borrows once.
    waiters: RefCell<[Waiters; 2]>,
    /// The directions with waiters (bit `1 << Waiters::of(dir)`), mirrored from `waiters` by
    /// the reactor's thread (its only writer) for a move on another thread to read: a hint,
    /// which the move protocol makes safe to act on even when stale (`bound.rs`).
    waiting: AtomicU8,
    /// A level-triggered registration's interest (`None`: edge-triggered, registered by mio).
    pub(super) level: Option<Level>,
}

// SAFETY: the cells and the waker lists are only read or written on the reactor's thread: by
// the reactor, which is `!Send`, and through a `Registration`, whose every access goes through
// `Registration::here`, which checks that the binding's reactor is the one entered on the
// calling thread (`Home::is_current`; a `Reactor` is `!Send`, so it is entered only on its own
// thread). A binding that moves leaves its state behind, untouched, and starts a new one on the
// reactor it moves to (`bound`'s protocol), so a move never shares these cells. From any other
// thread the value can only be dropped, as the last `Arc`, and then nothing else can touch it;
// what its drop releases (wakers) is itself `Send`.
unsafe impl Send for ScheduledIo {}
// SAFETY: as above: a shared reference is used on the reactor's thread only.
unsafe impl Sync for ScheduledIo {}

impl ScheduledIo {
    /// A fresh, optimistically ready registration state; `level` for a level-triggered
    /// registration, `None` for an edge-triggered one.
    pub(crate) fn new(level: Option<Level>) -> ScheduledIo {
        ScheduledIo {
            readiness: Cell::new(Ready::READABLE | Ready::WRITABLE),
            tick: Cell::new(0),
            waiters: RefCell::new([Waiters::default(), Waiters::default()]),
            waiting: AtomicU8::new(0),
            level,
        }
    }

    /// Whether the descriptor is in the epoll set (an edge-triggered one always is; a
    /// level-triggered one leaves it while nothing is armed).
    pub(crate) fn in_epoll_set(&self) -> bool {
        self.level.as_ref().is_none_or(|l| l.in_set.get())
    }

    /// Takes a level-triggered descriptor out of the epoll set if it is in (see
    /// [`Level::leave`]); nothing for an edge-triggered one, which only its registration adds.
    pub(crate) fn leave_epoll_set(&self, home: &Home) {
        if let Some(level) = &self.level {
            level.leave(home);
        }
    }

    /// Moves the wakers of every task waiting here into `wake`: the registration moved away.
    pub(crate) fn take_waiters(&self, wake: &mut VecDeque<Waker>) {
        for waiters in self.waiters.borrow_mut().iter_mut() {
            waiters.move_into(wake);
        }
        self.waiting.store(0, Ordering::Relaxed);
    }

    /// Records whether tasks wait in `dir` ([`waiting`](Self::waiting)); on the reactor's thread
    /// only, its one writer, so a load and a store do.
    fn mark_waiting(&self, dir: Direction, waiting: bool) {
        let bit = 1 << Waiters::of(dir);
        let bits = self.waiting.load(Ordering::Relaxed);
        let new = if waiting { bits | bit } else { bits & !bit };
        if new != bits {
            self.waiting.store(new, Ordering::Relaxed);
        }
    }

    /// Whether tasks waited in `dir` when last seen, from any thread: a hint (see the field).
    pub(crate) fn has_waiters(&self, dir: Direction) -> bool {
        self.waiting.load(Ordering::Relaxed) & (1 << Waiters::of(dir)) != 0
    }

    /// Makes `dir` optimistically ready, as a new registration is: `dir` has just moved here,
    /// and events may have reached the reactor it left instead of this one. Counts as an event
    /// (the tick moves), so that no clear based on an older readiness undoes it.
    pub(crate) fn assume_ready(&self, dir: Direction) {
        let bit = match dir {
            Direction::Read => Ready::READABLE,
            Direction::Write => Ready::WRITABLE,
        };
        self.readiness.set(self.readiness.get() | bit);
        self.tick.set(self.tick.get().wrapping_add(1));
    }

    /// Records an event and moves the wakers it concerns into `wake`; for a level-triggered
    /// registration, first disarms what nobody waits for ([`Level::settle`]).
    ///
    /// Waking happens later, outside every reactor borrow: a waker may run arbitrary code,
    /// including code that registers or drops I/O on this reactor.
    pub(crate) fn dispatch(&self, ready: Ready, wake: &mut VecDeque<Waker>, home: &Home) {
        let mut waiters = self.waiters.borrow_mut();
        if let Some(level) = &self.level {
            let mut waiting = Ready::EMPTY;
            if !waiters[Waiters::of(Direction::Read)].is_empty() {
                waiting |= Ready::READABLE;
            }
            if !waiters[Waiters::of(Direction::Write)].is_empty() {
                waiting |= Ready::WRITABLE;
            }
            level.settle(ready, waiting, home);
        }
        if ready.is_empty() {
            return;
        }
        self.readiness.set(self.readiness.get() | ready);
        self.tick.set(self.tick.get().wrapping_add(1));
        for dir in [Direction::Read, Direction::Write] {
            if !ready.intersection(dir.mask()).is_empty() {
                waiters[Waiters::of(dir)].move_into(wake);
                self.mark_waiting(dir, false);
            }
        }
    }

    /// The readiness in `dir` right now, or `None` if there is none.
    pub(super) fn ready_now(&self, dir: Direction) -> Option<ReadyEvent> {
        let ready = self.readiness.get().intersection(dir.mask());
        (!ready.is_empty()).then(|| ReadyEvent {
            tick: self.tick.get(),
            ready,
        })
    }

    /// The pending half of a readiness poll (`Registration::poll_ready_in`): stores the task's
    /// waker, and arms `dir` if the registration is level-triggered. True if that put the
    /// descriptor back in the epoll set: the one case in which the caller checks that `dir` did
    /// not move meanwhile (`bound`'s protocol, step 6).
    #[inline(never)]
    pub(super) fn wait(&self, cx: &mut Context<'_>, dir: Direction, home: &Home) -> bool {
        // No event can be dispatched between the readiness check and this push: the reactor
        // runs on this thread, and not while a task is being polled.
        self.waiters.borrow_mut()[Waiters::of(dir)].add(cx.waker());
        self.mark_waiting(dir, true);
        if let Some(level) = &self.level {
            match level.arm(dir, home) {
                Some(joined) => return joined,
                // epoll refused (out of memory or watches): no event will come, so the task
                // retries through its scheduler rather than waiting for ever.
                None => cx.waker().wake_by_ref(),
            }
        }
        false
    }

    /// Clears the bits of `event` except `keep`, unless an event arrived since it was taken.
    pub(super) fn clear(&self, event: ReadyEvent, keep: Ready) {
        if self.tick.get() == event.tick {
            let bits = event.ready.difference(keep);
            self.readiness.set(self.readiness.get().difference(bits));
        }
    }

    /// Clears `dir`'s bits except the closed ones, whatever the tick.
    pub(super) fn clear_direction(&self, dir: Direction) {
        let bits = dir.mask().difference(Ready::ALL_CLOSED);
        self.readiness.set(self.readiness.get().difference(bits));
    }
}
