//! The state a registration shares with its reactor: readiness, its tick, the waiters.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::task::{Context, Waker};

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, AtomicU8, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use super::level::{EpollSet, Level};
use super::waiters::Waiters;
use crate::ready::{Direction, Ready, ReadyEvent};

/// The state a registration shares with its reactor's slab.
///
/// The reactor writes it while dispatching events; the I/O type reads and clears it while a
/// task polls. Its owner core does both on its one thread; another core that harvests the
/// reactor's events (its thread could not poll them: see `Harvester`) dispatches them too.
///
/// - The readiness and its tick are one atomic word: a task reads it with a load and clears it
///   with a compare-and-swap against the tick it read, on its core's thread, without a lock.
/// - The waiter lists and the level-triggered interest are cells touched only by a thread that
///   holds the home's key ([`Home::key`](crate::home::Home)): the reactor's dispatch (its
///   owner's poll, or a harvester's), a task's wait, a move's removal from the epoll set.
///   The owner takes the key uncontended; a wait that finds it held by a harvester does not
///   wait for it: the task is woken to poll again.
///
/// A wait re-reads the readiness under the key before it stores its waker, and a dispatch
/// sets the readiness before it takes the waiters under the key: a task either sees the event
/// or is woken by it (`loom-tests/tests/io_harvest.rs`).
pub(crate) struct ScheduledIo {
    /// Readiness reported by epoll and not yet disproved by a `WouldBlock` (the low byte), and
    /// the tick (the high 32 bits), bumped on every event dispatched here: a clear applies only
    /// if the tick has not moved.
    ///
    /// Starts as readable and writable: a new descriptor is tried before anyone waits, and an
    /// edge-triggered registration of a ready descriptor still reports it on the next poll.
    word: AtomicU64,
    /// Tasks waiting to read (index 0) and to write (index 1, see [`Waiters::of`]); all the
    /// tasks of a direction are woken, and its list emptied, by readiness in that direction.
    /// One cell for both, so that an event borrows once. Under the home's key.
    waiters: RefCell<[Waiters; 2]>,
    /// The directions with waiters (bit `1 << Waiters::of(dir)`), mirrored from `waiters` under
    /// the key for a move on another thread to read: a hint, which the move protocol makes safe
    /// to act on even when stale (`bound.rs`).
    waiting: AtomicU8,
    /// A level-triggered registration's interest (`None`: edge-triggered, registered by mio).
    /// Its cells are under the home's key.
    pub(super) level: Option<Level>,
}

// SAFETY: `word` and `waiting` are atomics. The cells (`waiters`, and `level`'s) are read and
// written only by a thread that holds the key of the home this state is registered with: the
// reactor takes it around its dispatch, a harvester around its own, a `Registration` around a
// wait and a removal from the epoll set (`Registration::poll_ready_in`,
// `Registration::check_still_bound`), and the reactor around a slot's removal and its orphans'
// waiters; the key is a mutex, so those accesses never overlap, and its release and acquire
// order them. A binding that moves leaves its state behind and starts a new one on the reactor
// it moves to (`bound`'s protocol). Dropped as the last `Arc` anywhere, nothing else can touch
// it; what its drop releases (wakers) is itself `Send`.
unsafe impl Send for ScheduledIo {}
// SAFETY: as above: the shared accesses to the cells are serialised by the home's key.
unsafe impl Sync for ScheduledIo {}

/// The tick's place in [`ScheduledIo::word`].
const TICK_SHIFT: u32 = 32;

/// The readiness in `word`.
#[inline(always)]
fn ready_of(word: u64) -> Ready {
    Ready::from_bits(word as u8)
}

/// The tick in `word`.
#[inline(always)]
fn tick_of(word: u64) -> u32 {
    (word >> TICK_SHIFT) as u32
}

impl ScheduledIo {
    /// A fresh, optimistically ready registration state; `level` for a level-triggered
    /// registration, `None` for an edge-triggered one.
    pub(crate) fn new(level: Option<Level>) -> ScheduledIo {
        ScheduledIo {
            word: AtomicU64::new(u64::from((Ready::READABLE | Ready::WRITABLE).bits())),
            waiters: RefCell::new([Waiters::default(), Waiters::default()]),
            waiting: AtomicU8::new(0),
            level,
        }
    }

    /// The readiness recorded now, in every direction.
    #[inline]
    pub(crate) fn readiness(&self) -> Ready {
        ready_of(self.word.load(Ordering::Acquire))
    }

    /// Whether the descriptor is in the epoll set (an edge-triggered one always is; a
    /// level-triggered one leaves it while nothing is armed). Under the home's key.
    pub(crate) fn in_epoll_set(&self) -> bool {
        self.level.as_ref().is_none_or(|l| l.in_set.get())
    }

    /// Takes a level-triggered descriptor out of the epoll set if it is in (see
    /// [`Level::leave`]); nothing for an edge-triggered one, which only its registration adds.
    /// Under the home's key.
    pub(crate) fn leave_epoll_set(&self, set: EpollSet<'_>) {
        if let Some(level) = &self.level {
            level.leave(set);
        }
    }

    /// Moves the wakers of every task waiting here into `wake`: the registration moved away.
    /// Under the home's key.
    pub(crate) fn take_waiters(&self, wake: &mut VecDeque<Waker>) {
        for waiters in self.waiters.borrow_mut().iter_mut() {
            waiters.move_into(wake);
        }
        self.waiting.store(0, Ordering::Relaxed);
    }

    /// Records whether tasks wait in `dir` ([`waiting`](Self::waiting)); under the home's key,
    /// so a load and a store do.
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
    /// (the tick moves), so that no clear based on an older readiness undoes it. Under the
    /// home's key.
    pub(crate) fn assume_ready(&self, dir: Direction) {
        let bit = match dir {
            Direction::Read => Ready::READABLE,
            Direction::Write => Ready::WRITABLE,
        };
        self.record(bit);
    }

    /// ORs `ready` into the readiness and moves the tick on: a clear based on an older reading
    /// then misses. Under the home's key, so that records never race each other: a load and a
    /// store. A clear (a task's, on the owner's thread, without the key) that lands between
    /// the two is undone: the bits it cleared are set again, under a new tick, as if an event
    /// had come after it. Readiness may be optimistic (a `WouldBlock` clears it again); no
    /// event's bits are lost.
    #[inline]
    fn record(&self, ready: Ready) {
        let word = self.word.load(Ordering::Relaxed);
        let new = (word | u64::from(ready.bits())).wrapping_add(1 << TICK_SHIFT);
        self.word.store(new, Ordering::Release);
    }

    /// Records an event and moves the wakers it concerns into `wake`; for a level-triggered
    /// registration, first disarms what nobody waits for ([`Level::settle`]). Under the home's
    /// key (the owner's poll, or a harvester's).
    ///
    /// Waking happens later, outside every reactor borrow: a waker may run arbitrary code,
    /// including code that registers or drops I/O on this reactor.
    pub(crate) fn dispatch(&self, ready: Ready, wake: &mut VecDeque<Waker>, set: EpollSet<'_>) {
        let mut waiters = self.waiters.borrow_mut();
        if let Some(level) = &self.level {
            let mut waiting = Ready::EMPTY;
            if !waiters[Waiters::of(Direction::Read)].is_empty() {
                waiting |= Ready::READABLE;
            }
            if !waiters[Waiters::of(Direction::Write)].is_empty() {
                waiting |= Ready::WRITABLE;
            }
            level.settle(ready, waiting, set);
        }
        if ready.is_empty() {
            return;
        }
        // Before the waiters are taken: a wait that stored its waker after this dispatch (under
        // the key) read this readiness first.
        self.record(ready);
        for dir in [Direction::Read, Direction::Write] {
            if !ready.intersection(dir.mask()).is_empty() {
                waiters[Waiters::of(dir)].move_into(wake);
                self.mark_waiting(dir, false);
            }
        }
    }

    /// The readiness in `dir` right now, or `None` if there is none: one load.
    #[inline(always)]
    pub(super) fn ready_now(&self, dir: Direction) -> Option<ReadyEvent> {
        ScheduledIo::event_in(self.word(), dir)
    }

    /// The readiness word now (see [`event_in`](Self::event_in)).
    #[inline(always)]
    pub(super) fn word(&self) -> u64 {
        self.word.load(Ordering::Acquire)
    }

    /// The readiness in `dir` of `word`, or `None` if there is none.
    #[inline(always)]
    pub(super) fn event_in(word: u64, dir: Direction) -> Option<ReadyEvent> {
        let ready = ready_of(word).intersection(dir.mask());
        (!ready.is_empty()).then(|| ReadyEvent {
            tick: tick_of(word),
            ready,
        })
    }

    /// The pending half of a readiness poll (`Registration::poll_ready_in`), under the home's
    /// key, after the caller found no readiness in `dir` in the word `seen`: looks at the word
    /// again (an event a harvester dispatched since then: the task is woken to poll again,
    /// rare enough not to be worth a result of its own), else stores the task's waker and arms
    /// `dir` if the registration is level-triggered. True if that put the descriptor back in
    /// the epoll set: the one case in which the caller checks that `dir` did not move
    /// meanwhile (`bound`'s protocol, step 6).
    #[inline]
    pub(super) fn wait(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        seen: u64,
        set: EpollSet<'_>,
    ) -> bool {
        let word = self.word();
        if word != seen && ScheduledIo::event_in(word, dir).is_some() {
            cx.waker().wake_by_ref();
            return false;
        }
        self.waiters.borrow_mut()[Waiters::of(dir)].add(cx.waker());
        self.mark_waiting(dir, true);
        if let Some(level) = &self.level {
            match level.arm(dir, set) {
                Some(joined) => return joined,
                // epoll refused (out of memory or watches): no event will come, so the task
                // retries through its scheduler rather than waiting for ever.
                None => cx.waker().wake_by_ref(),
            }
        }
        false
    }

    /// Clears the bits of `event` except `keep`, unless an event arrived since it was taken.
    #[inline]
    pub(super) fn clear(&self, event: ReadyEvent, keep: Ready) {
        let bits = u64::from(event.ready.difference(keep).bits());
        let mut word = self.word.load(Ordering::Relaxed);
        while tick_of(word) == event.tick && word & bits != 0 {
            match self.word.compare_exchange_weak(
                word,
                word & !bits,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => word = now,
            }
        }
    }

    /// Clears `dir`'s bits except the closed ones, whatever the tick.
    pub(super) fn clear_direction(&self, dir: Direction) {
        let bits = dir.mask().difference(Ready::ALL_CLOSED);
        self.word
            .fetch_and(!u64::from(bits.bits()), Ordering::AcqRel);
    }
}
