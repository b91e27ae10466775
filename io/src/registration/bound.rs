//! Binding each direction of a registration to the reactors that poll it: at the first use,
//! again where it is polled on another core (it moves there, or, polled from several cores,
//! stays registered with each), checked at every use, undone by the drop (on the reactor's
//! thread, or from elsewhere through the home).
//!
//! # Protocol
//!
//! A registration holds the list of every [`Bound`] it made (a home, a slab key, the
//! [`ScheduledIo`] shared with that reactor's slab, and the directions bound there now: its
//! `live` bits), newest first ([`Bindings::newest`], each `Bound` pointing to the one made
//! before), and one binding per direction for the fast path, [`Bindings::dirs`]: the `Bound`
//! that direction was last bound to (null before the first use). The first use binds both
//! directions to the reactor current there. Polled where another reactor is current, a
//! direction either *moves* there (it leaves the reactor it was on: the task that polls it
//! moved) or, polled from several cores (two tasks on two cores reading one socket), *stays*
//! bound to every reactor where it is polled: the descriptor sits in each of their epoll sets,
//! and each core's waiters are woken by its own reactor's events. The two directions of a split
//! stream polled on two cores wait on two reactors the same way.
//!
//! 1. A `Bound` is made by the slow path only ([`Registration::bind_here`], under
//!    [`Bindings::bounds`]), on the thread of the reactor it registers with, pushed at the head
//!    of the list, and never freed before the registration drops (`&mut self`): a pointer
//!    loaded from `dirs` or the list stays valid as long as the `&Registration` it was loaded
//!    through, whatever other threads do meanwhile. Only its `live` bits change (under the
//!    lock); once none is left (it moved away, its key handed over), none is set again.
//! 2. A `Bound`'s `ScheduledIo` is used by tasks only on its home's thread (another core that
//!    harvests the home's events dispatches into it under the home's key, as the home's own
//!    poll does: see `ScheduledIo`): every use reaches it through [`Registration::here`],
//!    which checks that the home is current on the calling thread first: `dirs[d]`, else the newest `Bound` of the current home in the list, if `d`
//!    is live there (a walk of a few pointers, without the lock). At most one live `Bound` of a
//!    registration per home: a direction coming to a reactor where the other is bound shares
//!    its `Bound`; a new one is made only where none is live, so the newest `Bound` of a home
//!    is the only one that may be live. A direction is live in `dirs[d]`'s `Bound`, and, once
//!    polled from several cores, in others too; otherwise in that one alone.
//! 3. Binding direction `d` to reactor `R`, on `R`'s thread, under `bounds`: (a) take `R`'s live
//!    `Bound` if there is one, with `d` made optimistically ready, or register the descriptor
//!    with `R` (a new `Bound`, optimistically ready; counted in `R`'s `rebinds`); set `d`'s
//!    `live` bit there, and store it in `dirs[d]` (both sequentially consistent). (b)
//!    `d` stays on the `Bound` it was on (`old`, `dirs[d]`'s before) if it is polled from
//!    several cores: a task waits in `d` there ([`ScheduledIo::has_waiters`], an atomic hint
//!    the old reactor keeps), or `d` comes back to a reactor it was bound to before; from then
//!    on it never leaves a reactor (sticky, so two cores never trade it at every use). (c)
//!    Otherwise `d` moves: the other direction comes along if it is live on the same old
//!    `Bound`, stays on one core, no task waits in it there, and the registration is not split
//!    (step 7); `old`'s `live` bits of the directions that left are cleared (sequentially
//!    consistent), and if none is left, the descriptor is taken out of its epoll set (through
//!    its home's duplicate epoll descriptor) and its key handed to its home marked moved
//!    ([`Home::moved_away`]): the old reactor, at its next poll, wakes every task still
//!    waiting in that slot and frees it.
//! 4. The stores of (a) and the clear of (c) come before the hand-over: the old reactor takes
//!    the key under its home's lock, after them, so a poll on the old core after that take
//!    loads the new binding and finds the old `Bound` not live (and binds the direction again
//!    there, or waits where it is now), and a task that waited on the old core before the take
//!    is woken by it. No task is left waiting in a slot that no event and no move will reach
//!    (`loom-tests/tests/io_rebind.rs`). A task waiting in a `Bound` that stays live (the other
//!    direction's, or `d`'s own where it is polled from several cores) is woken by that
//!    reactor's events, as the descriptor stays in its set. A stale "no waiter" in (b) only
//!    moves `d`, and the move wakes that waiter; a stale "some" (a task that moved, its waker
//!    left behind) only keeps `d` registered on a core where it is no longer polled: a
//!    level-triggered descriptor leaves that epoll set at the first event there that finds no
//!    task waiting, an edge-triggered one stays in it until the registration drops.
//! 5. An event that reaches the old reactor during a move is dispatched into the old
//!    `ScheduledIo`, or lost with the removal: harmless, because the direction starts
//!    optimistically ready where it moved (3a), so its first use there tries the system call
//!    before it waits; only a `WouldBlock` there makes it wait, on the reactor where it is now.
//! 6. A task on the old core that found the old `Bound` live before (c) cleared it may arm a
//!    level-triggered descriptor again after (c) took it out, with an `EPOLL_CTL_ADD` (a
//!    modification of a descriptor out of the set fails, and the task retries). So a wait that
//!    added the descriptor loads its `live` bit again ([`Registration::check_still_bound`],
//!    sequentially consistent, as the clear of (c) is): still set, the arm came before the
//!    clear, so before (c)'s removal, which undoes it; cleared, the task takes the descriptor
//!    out again itself ([`ScheduledIo::leave_epoll_set`]) unless the other direction is still
//!    live there, and wakes itself to poll where it went. Only the task's own thread may do
//!    that removal: epoll knows a descriptor by number, and the one thread that could have put
//!    it back in that set under a new slot is this one.
//! 7. A registration whose directions are used by tasks on two cores moves a direction at a
//!    time: taking the other direction along would make the other task move it back at its
//!    next use. It is known split once split into halves ([`Registration::mark_split`]), once
//!    a direction moved alone because a task waited in the other, and once a direction is
//!    polled from several cores (3b).
//!
//! What it keeps: at most one live `Bound` a core, and at most two it left (a new `Bound` on a
//! core is made by a direction that was never bound there, or that comes back, and stays): a
//! registration's memory and its registrations grow with the cores that poll it, never with
//! its traffic.

use std::io;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::Arc;
use std::task::Context;

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};
#[cfg(loom)]
use loom::sync::Mutex;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};
#[cfg(not(loom))]
use std::sync::Mutex;

use super::scheduled::ScheduledIo;
use super::Registration;
use crate::home::{lock, Home};
use crate::reactor::Reactor;
use crate::ready::Direction;

/// A registration's place in a reactor; only its `live` bits change once made (see the
/// protocol).
pub(super) struct Bound {
    /// The reactor's cross-thread part: whether it is current here, where a drop elsewhere goes.
    pub(super) home: Arc<Home>,
    /// Readiness and wakers, shared with the reactor's slab.
    pub(super) io: Arc<ScheduledIo>,
    /// This registration's key in the reactor's slab.
    pub(super) key: usize,
    /// The directions bound here now ([`Bindings::bit`]): set and cleared under the lock, read
    /// anywhere; none once it moved away (its key handed over), and then never again.
    live: AtomicU8,
    /// The directions ever bound here; under the lock only.
    ever: AtomicU8,
    /// The `Bound` made before this one: the list of every `Bound` made (protocol, 1).
    older: Option<Arc<Bound>>,
}

impl Bound {
    /// Whether `dir` is bound here now.
    #[inline]
    fn is_live(&self, dir: Direction, order: Ordering) -> bool {
        self.live.load(order) & Bindings::bit(dir) != 0
    }

    /// The next `Bound` of the list, older than this one.
    #[inline]
    fn next(&self) -> Option<&Bound> {
        self.older.as_deref()
    }
}

/// What the slow path changes, under one lock: the list it owns, and the directions polled from
/// several cores.
struct Slow {
    /// The newest `Bound` made, which owns the others through `older`.
    newest: Option<Arc<Bound>>,
    /// The directions polled from several cores ([`Bindings::bit`]): they stay bound to every
    /// reactor where they are polled (protocol, 3b).
    multi: u8,
}

/// The bindings of a registration and every `Bound` it made (see the protocol): kept until the
/// drop.
pub(super) struct Bindings {
    /// Where each direction was last bound (index [`Bindings::of`]); null before the first use.
    dirs: [AtomicPtr<Bound>; 2],
    /// The newest `Bound` made (null: none), for walks without the lock: the same as the lock's.
    newest: AtomicPtr<Bound>,
    /// The list and the directions polled from several cores; locked by the slow path and the
    /// drop only.
    bounds: Mutex<Slow>,
}

impl Bindings {
    /// No binding yet.
    pub(super) fn new() -> Bindings {
        Bindings {
            dirs: [
                AtomicPtr::new(ptr::null_mut()),
                AtomicPtr::new(ptr::null_mut()),
            ],
            newest: AtomicPtr::new(ptr::null_mut()),
            bounds: Mutex::new(Slow {
                newest: None,
                multi: 0,
            }),
        }
    }

    /// The index of `dir` in `dirs`.
    #[inline(always)]
    fn of(dir: Direction) -> usize {
        match dir {
            Direction::Read => 0,
            Direction::Write => 1,
        }
    }

    /// The bit of `dir` in a `Bound`'s `live` and `ever`, and in `multi`.
    #[inline(always)]
    fn bit(dir: Direction) -> u8 {
        1 << Bindings::of(dir)
    }

    /// Where `dir` was last bound, if anywhere: one load.
    #[inline(always)]
    fn get(&self, dir: Direction) -> Option<&Bound> {
        let bound = self.dirs[Bindings::of(dir)].load(Ordering::Acquire);
        // SAFETY: a non-null pointer in `dirs` comes from an `Arc<Bound>` that the list keeps
        // until the registration drops (protocol, 1), which cannot happen while `&self` lives;
        // the release store that published it orders the `Bound`'s writes before this acquire
        // load. A `Bound`'s fields other than its atomics are never written after it is made.
        unsafe { bound.as_ref() }
    }

    /// The newest `Bound` made, if any: the head of the list, one load.
    #[inline]
    fn newest(&self) -> Option<&Bound> {
        let bound = self.newest.load(Ordering::Acquire);
        // SAFETY: as in `get`: the pointer comes from the `Arc` the lock's `newest` holds (or
        // held: an older one is owned by a newer one's `older`), kept until the drop, and was
        // published by a release store.
        unsafe { bound.as_ref() }
    }

    /// The `Bound` of the reactor current here that may be live (the newest of its home,
    /// protocol 2), walking the list without the lock.
    #[cold]
    #[inline(never)]
    fn of_current_home(&self) -> Option<&Bound> {
        let mut next = self.newest();
        while let Some(b) = next {
            if b.home.is_current() {
                return Some(b);
            }
            next = b.next();
        }
        None
    }

    /// `dir`'s place in the reactor current here when `dirs` names another: the current home's
    /// `Bound`, if `dir` is live there (a direction polled from several cores).
    #[cold]
    #[inline(never)]
    fn live_here(&self, dir: Direction) -> Option<&Bound> {
        self.of_current_home()
            .filter(|b| b.is_live(dir, Ordering::Acquire))
    }
}

/// The error of a use where no reactor is current.
fn no_runtime(fd: RawFd) -> io::Error {
    io::Error::other(format!(
        "no tickless runtime is running on this thread: an I/O object (fd {fd}) is driven by \
         the core that polls it, and none runs here"
    ))
}

impl Registration {
    /// Registers `fd` with this thread's current reactor, for the given interest, at once.
    ///
    /// # Errors
    ///
    /// No reactor is current on this thread, or epoll refused the descriptor (for example
    /// `EPERM` for a regular file, `EEXIST` if it is already registered).
    pub fn new(fd: RawFd, interest: mio::Interest) -> io::Result<Registration> {
        Reactor::with_current(|reactor| Registration::new_in(reactor, fd, interest))
            .map_err(|_| no_runtime(fd))?
    }

    /// Registers `fd` with `reactor`, for the given interest, at once.
    ///
    /// # Errors
    ///
    /// As for [`new`](Self::new), less the missing reactor.
    pub fn new_in(
        reactor: &Reactor,
        fd: RawFd,
        interest: mio::Interest,
    ) -> io::Result<Registration> {
        let registration = Registration::unbound(fd, interest, false);
        registration.bind_here(reactor, Direction::Read)?;
        Ok(registration)
    }

    /// A registration of `fd` for `interest` that registers with the reactor current where it
    /// is first used (level-triggered if `level`: the byte streams, whose reads through
    /// [`poll_read_io`](Self::poll_read_io) then never pay a read that says `WouldBlock` after
    /// one that filled the buffer).
    pub(crate) fn unbound(fd: RawFd, interest: mio::Interest, level: bool) -> Registration {
        Registration {
            fd,
            interest,
            level,
            split: AtomicBool::new(false),
            bindings: Bindings::new(),
        }
    }

    /// Binds `dir` to `reactor` (current on this thread, or about to be polled here): both
    /// directions at the first use; later `dir`, moved here (with the other direction along
    /// where step 3c allows) or also bound here (step 3b): steps 3, 4 and 7 of the protocol.
    fn bind_here(&self, reactor: &Reactor, dir: Direction) -> io::Result<&Bound> {
        let mut slow = lock(&self.bindings.bounds);
        let home = reactor.home();
        let other_dir = match dir {
            Direction::Read => Direction::Write,
            Direction::Write => Direction::Read,
        };
        let (d, o) = (Bindings::bit(dir), Bindings::bit(other_dir));
        // Stores happen under the lock alone: these are the latest.
        let old = self.bindings.get(dir);
        if let Some(old) = old {
            if Arc::ptr_eq(&old.home, home) {
                return Ok(old);
            }
            if old.home.is_closed() {
                return Err(Home::stopped(self.fd));
            }
        }
        // This home's live `Bound` (its newest, protocol 2), and whether `dir` was here before.
        let (mut here, mut newest_of_home, mut came_back) = (None, true, false);
        let mut next = slow.newest.as_deref();
        while let Some(b) = next {
            if Arc::ptr_eq(&b.home, home) {
                if newest_of_home && b.live.load(Ordering::Relaxed) != 0 {
                    here = Some(ptr::from_ref(b));
                }
                newest_of_home = false;
                came_back |= b.ever.load(Ordering::Relaxed) & d != 0;
            }
            next = b.next();
        }
        // SAFETY: the list keeps every `Bound` until the registration drops (protocol, 1),
        // which cannot happen while `&self` lives, and an `Arc`'s value never moves: the
        // reference outlives the guard it was found through.
        let here: Option<&Bound> = here.map(|b| unsafe { &*b });
        if let Some(b) = here.filter(|b| b.is_live(dir, Ordering::Relaxed)) {
            return Ok(b);
        }
        let new = match here {
            Some(shared) => {
                // Step 3a: we are on its home's thread; under its key, as every record of
                // readiness is (a harvester may be dispatching there).
                let key = shared.home.key();
                shared.io.assume_ready(dir);
                drop(key);
                shared
            }
            None => {
                let (key, io) =
                    reactor.register(self.fd, self.interest, self.level, old.is_none())?;
                let bound = Arc::new(Bound {
                    home: Arc::clone(home),
                    io,
                    key,
                    live: AtomicU8::new(0),
                    ever: AtomicU8::new(0),
                    older: slow.newest.take(),
                });
                let made = Arc::as_ptr(&bound);
                slow.newest = Some(bound);
                self.bindings
                    .newest
                    .store(made.cast_mut(), Ordering::Release);
                if old.is_some() {
                    home.counters.rebinds.incr();
                }
                // SAFETY: as `here`'s: the list keeps the `Arc` until the registration drops.
                unsafe { &*made }
            }
        };
        // Step 3b: polled from several cores, `dir` stays where it is bound, from now on.
        let multi =
            old.is_some_and(|old| slow.multi & d != 0 || came_back || old.io.has_waiters(dir));
        if multi {
            slow.multi |= d;
        }
        // Step 3c: the other direction comes along if the whole stream moves (steps 3c, 7).
        let both = match old {
            None => self.bindings.get(other_dir).is_none(),
            Some(old) if !multi && old.is_live(other_dir, Ordering::Relaxed) => {
                let split = self.split.load(Ordering::Relaxed)
                    || slow.multi & o != 0
                    || old.io.has_waiters(other_dir);
                if split {
                    self.split.store(true, Ordering::Relaxed);
                }
                !split
            }
            Some(_) => false,
        };
        let bits = if both { d | o } else { d };
        new.ever.fetch_or(bits, Ordering::Relaxed);
        new.live.fetch_or(bits, Ordering::SeqCst);
        let published = ptr::from_ref(new).cast_mut();
        if both {
            self.bindings.dirs[Bindings::of(other_dir)].store(published, Ordering::SeqCst);
        }
        // Step 3a's store, before 3c's hand-over (see step 4).
        self.bindings.dirs[Bindings::of(dir)].store(published, Ordering::SeqCst);
        if let Some(old) = old.filter(|_| !multi) {
            // Step 3c: sequentially consistent for step 6, before the hand-over (step 4).
            let left = old.live.fetch_and(!bits, Ordering::SeqCst) & !bits;
            if left == 0 {
                old.home.moved_away(old.key, self.fd);
            }
        }
        Ok(new)
    }

    /// Its place in the reactor current here for `dir`: bound by this first use, moved or also
    /// bound here by this use, or checked to be this reactor's (once per call of the public
    /// methods: the loops hold on to it).
    ///
    /// # Errors
    ///
    /// Used where no reactor is current; bound to a reactor that is gone; epoll refused the
    /// descriptor.
    #[inline(always)]
    pub(super) fn io(&self, dir: Direction) -> io::Result<&Bound> {
        match self.here(dir) {
            Some(bound) => Ok(bound),
            None => self.elsewhere(dir),
        }
    }

    /// Its place for `dir` in the reactor current here, if `dir` is bound to that one: the fast
    /// path of [`io`](Self::io), a load of the binding and a compare with one thread-local;
    /// where the binding names another reactor, a walk of the list (a direction polled from
    /// several cores, protocol 2).
    #[inline(always)]
    pub(super) fn here(&self, dir: Direction) -> Option<&Bound> {
        let bound = self.bindings.get(dir)?;
        if bound.home.is_current() {
            Some(bound)
        } else {
            self.bindings.live_here(dir)
        }
    }

    /// The place in the reactor current here of either direction: the one live `Bound` of this
    /// home if any (protocol, 2).
    #[inline]
    pub(super) fn here_any(&self) -> Option<&Bound> {
        self.here(Direction::Read)
            .or_else(|| self.here(Direction::Write))
    }

    /// [`io`](Self::io) when `dir` is not bound to the current reactor: bind it here, or say why
    /// it cannot be used here.
    #[cold]
    #[inline(never)]
    pub(super) fn elsewhere(&self, dir: Direction) -> io::Result<&Bound> {
        if self.bindings.get(dir).is_some_and(|b| b.home.is_closed()) {
            return Err(Home::stopped(self.fd));
        }
        Reactor::with_current(|reactor| self.bind_here(reactor, dir))
            .map_err(|_| no_runtime(self.fd))?
    }

    /// Step 6 of the protocol, after a task armed `b` for `dir` (on `b`'s thread): if `dir` has
    /// left `b` meanwhile, takes the descriptor out of `b`'s epoll set and wakes the task.
    #[inline(never)]
    pub(super) fn check_still_bound(&self, b: &Bound, dir: Direction, cx: &Context<'_>) {
        if !b.is_live(dir, Ordering::SeqCst) {
            let slow = lock(&self.bindings.bounds);
            // A binding the other direction still uses stays in the set: its waiters need its
            // events, and the extra armed direction is disarmed at its first idle event.
            if b.live.load(Ordering::Relaxed) == 0 {
                let key = b.home.key();
                b.io.leave_epoll_set(b.home.epoll_set());
                drop(key);
            }
            drop(slow);
            cx.waker().wake_by_ref();
        }
    }

    /// Marks the registration as shared by the two halves of a split stream: a direction that
    /// moves leaves the other where it is (step 7 of the protocol).
    pub(crate) fn mark_split(&self) {
        self.split.store(true, Ordering::Relaxed);
    }

    /// Whether some direction is bound (for `Debug`).
    pub(super) fn bound_somewhere(&self) -> Option<&Bound> {
        self.bindings
            .get(Direction::Read)
            .or_else(|| self.bindings.get(Direction::Write))
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let newest = lock(&self.bindings.bounds).newest.take();
        let mut next = newest.as_deref();
        while let Some(b) = next {
            next = b.next();
            if b.live.load(Ordering::Relaxed) == 0 {
                // It moved away: out of that epoll set already, its key handed over.
                continue;
            }
            if b.home.is_current() {
                // The current reactor is this binding's (the thread-local says so).
                let removed = Reactor::with_current(|r| r.deregister(b.key, self.fd));
                if removed.is_ok() {
                    continue;
                }
            }
            // Another thread, or the reactor is no longer current here (a thread-local
            // destructor, after the runtime's loop): leave the slot to the reactor.
            b.home.orphan(b.key, self.fd);
        }
    }
}
