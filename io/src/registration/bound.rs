//! Binding each direction of a registration to a reactor and its home: at the first use, again
//! where it is polled on another core (it moves there), checked at every use, undone by the
//! drop (on the reactor's thread, or from elsewhere through the home).
//!
//! # Protocol
//!
//! A registration holds one binding per direction, [`Registration::dirs`]: a pointer to a
//! [`Bound`] (a home, a slab key, the [`ScheduledIo`] shared with that reactor's slab), null
//! before the first use. The first use binds both directions to the reactor current there; a
//! direction polled where another reactor is current moves there; the two directions of a split
//! stream polled on two cores wait on two reactors (the descriptor sits in both epoll sets).
//!
//! 1. A `Bound` is made by the slow path only ([`Registration::bind_here`], under
//!    [`Registration::bounds`]), on the thread of the reactor it registers with, and it is
//!    never changed, nor freed before the registration drops (`&mut self`): a pointer loaded
//!    from `dirs` stays valid as long as the `&Registration` it was loaded through, whatever
//!    other threads do meanwhile. A stale one is harmless: its home is not current here, so the
//!    use takes the slow path. (The price: a registration keeps the bindings it left, about 200
//!    bytes each with their state, until it drops.)
//! 2. A `Bound`'s `ScheduledIo` is touched only on its home's thread: every use reaches it
//!    through [`Registration::here`], which checks that the home is current on the calling
//!    thread first. At most one live `Bound` of a registration per home: a direction moving to
//!    the reactor the other direction is on shares its `Bound`.
//! 3. Moving direction `d` to reactor `R`, on `R`'s thread, under `bounds`: (a) take the other
//!    direction's `Bound` if it is `R`'s, with `d` made optimistically ready, or register the
//!    descriptor with `R` (a new `Bound`, optimistically ready; counted in `R`'s `rebinds`),
//!    taking the other direction along if it is on the same old `Bound` and no task waits in
//!    it there ([`ScheduledIo::has_waiters`], an atomic hint the old reactor keeps: a stale
//!    "none" is made good by (c)'s wake, a stale "some" only leaves the direction where it
//!    is); (b) store it in `dirs[d]` (and the other's; release); (c) if no direction points to
//!    the old `Bound` any more, take the descriptor out of its epoll set (through its home's
//!    duplicate epoll descriptor) and hand its key to its home marked moved
//!    ([`Home::moved_away`]): the old reactor, at its next poll, wakes every task still
//!    waiting in that slot and frees it.
//! 4. (b) comes before (c): the old reactor takes the key under its home's lock, after the store,
//!    so a poll on the old core after that take loads the new binding (and moves, or waits
//!    where the direction is now), and a task that waited on the old core before the take is
//!    woken by it. No task is left waiting in a slot that no event and no move will reach
//!    (`loom-tests/tests/io_rebind.rs`). A task waiting in a `Bound` that stays live (the
//!    other direction's) is woken by that reactor's events, as the descriptor stays in its set.
//! 5. An event that reaches the old reactor during the move is dispatched into the old
//!    `ScheduledIo`, or lost with the removal: harmless, because the direction starts
//!    optimistically ready where it moved (3a), so its first use there tries the system call
//!    before it waits; only a `WouldBlock` there makes it wait, on the reactor where it is now.
//! 6. A task on the old core that loaded the old binding before the store may arm a
//!    level-triggered descriptor again after (c) took it out, with an `EPOLL_CTL_ADD` (a
//!    modification of a descriptor out of the set fails, and the task retries). So a wait that
//!    added the descriptor loads its binding again ([`Registration::check_still_bound`],
//!    sequentially consistent, as the store of (b) is): still the old one, the arm came before
//!    the store, so before (c)'s removal, which undoes it; another one, the task takes the
//!    descriptor out again itself ([`ScheduledIo::leave_epoll_set`]) unless the other
//!    direction still uses that binding, and wakes itself to poll where it went. Only the
//!    task's own thread may do that removal: epoll knows a descriptor by number, and the one
//!    thread that could have put it back in that set under a new slot is this one.
//! 7. A registration shared by tasks on two cores moves a direction at a time from then on:
//!    taking the other direction along would make the other task move it back at its next use,
//!    and the two would trade it at every turn. It is known shared once split into halves
//!    ([`Registration::mark_split`]), once a direction moved alone because a task waited in
//!    the other, and once it comes back to a reactor it left.

use std::io;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::Arc;
use std::task::Context;

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
#[cfg(loom)]
use loom::sync::Mutex;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
#[cfg(not(loom))]
use std::sync::Mutex;

use super::scheduled::ScheduledIo;
use super::Registration;
use crate::home::{lock, Home};
use crate::reactor::Reactor;
use crate::ready::Direction;

/// A registration's place in a reactor; never changed once made (see the protocol).
pub(super) struct Bound {
    /// The reactor's cross-thread part: whether it is current here, where a drop elsewhere goes.
    pub(super) home: Arc<Home>,
    /// Readiness and wakers, shared with the reactor's slab.
    pub(super) io: Arc<ScheduledIo>,
    /// This registration's key in the reactor's slab.
    pub(super) key: usize,
}

/// The bindings of a registration and every `Bound` it made, with whether each is live (some
/// direction points to it, and it holds its slot in its reactor): kept until the drop.
pub(super) struct Bindings {
    /// Where each direction is bound (index [`Bindings::of`]); null before the first use.
    dirs: [AtomicPtr<Bound>; 2],
    /// Every `Bound` made, live or left; locked by the slow path and the drop only.
    bounds: Mutex<Vec<(Arc<Bound>, bool)>>,
}

impl Bindings {
    /// No binding yet.
    pub(super) fn new() -> Bindings {
        Bindings {
            dirs: [
                AtomicPtr::new(ptr::null_mut()),
                AtomicPtr::new(ptr::null_mut()),
            ],
            bounds: Mutex::new(Vec::new()),
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

    /// Where `dir` is bound, if anywhere: one load.
    #[inline(always)]
    fn get(&self, dir: Direction) -> Option<&Bound> {
        let bound = self.dirs[Bindings::of(dir)].load(Ordering::Acquire);
        // SAFETY: a non-null pointer in `dirs` comes from an `Arc<Bound>` that `bounds` keeps
        // until the registration drops (protocol, 1), which cannot happen while `&self` lives;
        // the release store that published it orders the `Bound`'s writes before this acquire
        // load. A `Bound` is never written after it is made, so a shared reference is sound.
        unsafe { bound.as_ref() }
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
    /// directions at the first use; when it moves, `dir`, and the other direction along where
    /// step 3a allows (steps 3, 4 and 7 of the protocol).
    fn bind_here(&self, reactor: &Reactor, dir: Direction) -> io::Result<&Bound> {
        let mut bounds = lock(&self.bindings.bounds);
        let home = reactor.home();
        let other_dir = match dir {
            Direction::Read => Direction::Write,
            Direction::Write => Direction::Read,
        };
        // Stores happen under the lock alone: these are the latest.
        let old = self.bindings.get(dir);
        let other = self.bindings.get(other_dir);
        if let Some(old) = old {
            if Arc::ptr_eq(&old.home, home) {
                return Ok(old);
            }
            if old.home.is_closed() {
                return Err(Home::stopped(self.fd));
            }
        }
        let new = match other.filter(|b| Arc::ptr_eq(&b.home, home)) {
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
                });
                let made = Arc::as_ptr(&bound);
                bounds.push((bound, true));
                if old.is_some() {
                    home.counters.rebinds.incr();
                }
                // SAFETY: `bounds` keeps the `Arc` until the registration drops (protocol, 1),
                // so the `Bound` outlives `&self`.
                unsafe { &*made }
            }
        };
        let published = ptr::from_ref(new).cast_mut();
        // Step 3a: the other direction comes along if it is on the old reactor with no task
        // waiting in it there (a whole stream moves at once).
        let both = match (old, other) {
            (None, None) => true,
            (Some(old), Some(other)) if ptr::eq(old, other) => {
                // Step 7: shared by tasks on two cores, it moves a direction at a time.
                let shared = self.split.load(Ordering::Relaxed)
                    || old.io.has_waiters(other_dir)
                    || bounds
                        .iter()
                        .any(|(b, live)| !*live && Arc::ptr_eq(&b.home, home));
                if shared {
                    self.split.store(true, Ordering::Relaxed);
                }
                !shared
            }
            _ => false,
        };
        if both {
            self.bindings.dirs[Bindings::of(other_dir)].store(published, Ordering::SeqCst);
        }
        // Step 3b, before 3c (see step 4); sequentially consistent for step 6.
        self.bindings.dirs[Bindings::of(dir)].store(published, Ordering::SeqCst);
        if let Some(old) = old {
            if both || !other.is_some_and(|b| ptr::eq(b, old)) {
                // Step 3c: no direction is left on the old reactor.
                if let Some(entry) = bounds.iter_mut().find(|(b, _)| ptr::eq(&**b, old)) {
                    entry.1 = false;
                }
                old.home.moved_away(old.key, self.fd);
            }
        }
        Ok(new)
    }

    /// Its place in the reactor current here for `dir`: bound by this first use, moved here by
    /// this use, or checked to be this reactor's (once per call of the public methods: the
    /// loops hold on to it).
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
    /// path of [`io`](Self::io), a load of the binding and a compare with one thread-local.
    #[inline(always)]
    pub(super) fn here(&self, dir: Direction) -> Option<&Bound> {
        let bound = self.bindings.get(dir)?;
        bound.home.is_current().then_some(bound)
    }

    /// The place in the reactor current here of either direction: the one `Bound` of this home
    /// if any (protocol, 2).
    #[inline]
    pub(super) fn here_any(&self) -> Option<&Bound> {
        self.here(Direction::Read)
            .or_else(|| self.here(Direction::Write))
    }

    /// [`io`](Self::io) when `dir` is not bound to the current reactor: bind it, move it here,
    /// or say why it cannot be used here.
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
    /// moved meanwhile, takes the descriptor out of `b`'s epoll set and wakes the task.
    #[inline(never)]
    pub(super) fn check_still_bound(&self, b: &Bound, dir: Direction, cx: &Context<'_>) {
        let now = self.bindings.dirs[Bindings::of(dir)].load(Ordering::SeqCst);
        if !ptr::eq(now, b) {
            let bounds = lock(&self.bindings.bounds);
            // A binding the other direction still uses stays in the set: its waiters need its
            // events, and the extra armed direction is disarmed at its first idle event.
            if !bounds.iter().any(|(x, live)| *live && ptr::eq(&**x, b)) {
                let key = b.home.key();
                b.io.leave_epoll_set(b.home.epoll_set());
                drop(key);
            }
            drop(bounds);
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
        let bounds = std::mem::take(&mut *lock(&self.bindings.bounds));
        for (b, live) in bounds {
            if !live {
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
