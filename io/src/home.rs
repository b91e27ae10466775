//! The part of a reactor that other threads can reach: whether the reactor still runs, and
//! where the registrations dropped away from it go.
//!
//! The I/O types are `Send`, so that a stream can sit in a `Send` future or a library's
//! connection pool, but their readiness and waker lists are plain cells read and written by the
//! owning core alone. [`Home`] is what lets that hold:
//!
//! - a registration belongs to the reactor that was current where it was first used (see
//!   `Registration`), and every later use first checks that this reactor is the one entered on
//!   the calling thread ([`Home::is_current`]: one thread-local read and a compare). Elsewhere
//!   it panics with a clear message while the reactor lives, and gives an error once the reactor
//!   is gone ([`Home::close`]), instead of waiting for events nobody will deliver;
//! - a registration dropped away from its reactor (on another thread, or on its own thread once
//!   the reactor is no longer current there) removes its descriptor from the epoll set through
//!   its own registry (a duplicate of the epoll descriptor, usable from any thread and open
//!   as long as a registration or the reactor needs it), then leaves its slab key in
//!   [`Home::orphans`], raises [`Home::pending`] and unparks the reactor, which frees the slot
//!   on its own thread at its next poll ([`Home::take_orphans`]). The key is pushed *before*
//!   the flag is raised, and the reactor lowers the flag *before* it takes the list, so a key
//!   missed by one take always leaves the flag up for the next
//!   (`loom-tests/tests/foreign_drop.rs`). The unpark only makes a sleeping core get there
//!   soon.

use std::fmt;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, RawFd};

use mio::unix::SourceFd;

use crate::stats::SharedCounters;
use crate::unparker::Unparker;

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, Ordering};
#[cfg(loom)]
use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(not(loom))]
use std::sync::{Mutex, MutexGuard};

/// A reactor's cross-thread part, shared by the reactor and each of its registrations.
pub(crate) struct Home {
    /// A duplicate of the epoll descriptor, to deregister from any thread.
    registry: mio::Registry,
    /// Slab keys of registrations dropped away from the owner, already out of the epoll set.
    orphans: Mutex<Vec<usize>>,
    /// Raised after a key is pushed to `orphans`: the reactor's poll looks at the list only
    /// when it is up.
    pending: AtomicBool,
    /// Wakes the reactor so that it frees the orphans' slots.
    unparker: Unparker,
    /// Counters the reactor and its registrations advance on the reactor's thread.
    pub(crate) counters: SharedCounters,
    /// The reactor is gone: its registrations will never see another event.
    closed: AtomicBool,
}

impl Home {
    /// The home of a reactor created on this thread, polling `poll`, woken by `unparker`.
    pub(crate) fn new(poll: &mio::Poll, unparker: Unparker) -> io::Result<Home> {
        Ok(Home {
            registry: poll.registry().try_clone()?,
            orphans: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
            unparker,
            counters: SharedCounters::default(),
            closed: AtomicBool::new(false),
        })
    }

    /// The epoll instance (this home's duplicate of its descriptor, open as long as the home):
    /// where the reactor's thread changes a level-triggered registration's interest.
    #[inline]
    pub(crate) fn epoll_fd(&self) -> RawFd {
        self.registry.as_raw_fd()
    }

    /// Whether this home's reactor is the one entered on this thread.
    #[inline]
    pub(crate) fn is_current(&self) -> bool {
        crate::context::is_current(self)
    }

    /// The reactor is being dropped: from now on its registrations fail instead of waiting.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// What using a registration of this home away from its reactor gives (`fd` names it): an
    /// error once the reactor is gone, a panic while it lives (a misuse: the registration
    /// belongs to another core).
    #[cold]
    #[track_caller]
    pub(crate) fn used_elsewhere(&self, fd: RawFd) -> io::Error {
        if self.closed.load(Ordering::Acquire) {
            return io::Error::other(format!(
                "tickless: the core that drives this I/O object (fd {fd}) has stopped: its \
                 runtime was shut down or dropped"
            ));
        }
        wrong_core(fd)
    }

    /// Drops a registration away from the reactor's thread: `fd` leaves the epoll set now (it
    /// must still be open), and the slot at `key` is freed by the reactor's next poll.
    pub(crate) fn orphan(&self, key: usize, fd: RawFd) {
        // It fails only if the descriptor was closed first, which removed it from the set
        // already (see `Reactor::deregister`).
        let _gone_already = self.registry.deregister(&mut SourceFd(&fd));
        lock(&self.orphans).push(key);
        self.pending.store(true, Ordering::Release);
        self.unparker.unpark();
    }

    /// Whether a registration was orphaned since the last [`take_orphans`](Self::take_orphans):
    /// one relaxed load, so the reactor asks on every poll.
    #[inline]
    pub(crate) fn has_orphans(&self) -> bool {
        self.pending.load(Ordering::Relaxed)
    }

    /// The keys orphaned since the last call; the reactor frees their slots.
    pub(crate) fn take_orphans(&self) -> Vec<usize> {
        // Lower the flag before taking the list: a key pushed after the take raises it again.
        self.pending.store(false, Ordering::Relaxed);
        mem::take(&mut *lock(&self.orphans))
    }
}

/// Locks `m`, ignoring poisoning: the list is never left half-written.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The panic of an I/O object used away from its core.
#[cold]
#[track_caller]
fn wrong_core(fd: RawFd) -> ! {
    panic!(
        "tickless: an I/O object (fd {fd}) was used on a thread other than the core that \
         first polled it. A tickless stream is Send so that it can be stored in Send futures and \
         types, and it belongs to the core that polls it first: poll it only there (a task \
         spawned with tickless::spawn or tickless::task::spawn_local on that core), not on \
         another core, a tokio thread or a std thread"
    )
}

impl fmt::Debug for Home {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Home")
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
