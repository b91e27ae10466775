//! The part of a reactor that other threads can reach: which thread owns it, and where the
//! registrations dropped away from that thread go.
//!
//! The I/O types are `Send`, so that a stream can sit in a `Send` future or a library's
//! connection pool, but their readiness and waker lists are plain cells read and written by the
//! owning core alone. [`Home`] is what lets that hold:
//!
//! - every use of a registration first checks [`Home::is_current_thread`] (one thread-local read)
//!   and panics with a clear message on any other thread;
//! - a registration dropped on another thread (or on its own thread once the reactor is no
//!   longer current there) removes its descriptor from the epoll set through
//!   its own registry (a duplicate of the epoll descriptor, usable from any thread and open
//!   as long as a registration or the reactor needs it), then leaves its slab key in
//!   [`Home::orphans`], raises [`Home::pending`] and unparks the reactor, which frees the slot
//!   on its own thread at its next poll ([`Home::take_orphans`]). The key is pushed *before*
//!   the flag is raised, and the reactor lowers the flag *before* it takes the list, so a key
//!   missed by one take always leaves the flag up for the next
//!   (`loom-tests/tests/foreign_drop.rs`). The unpark only makes a sleeping core get there
//!   soon.

use std::cell::Cell;
use std::fmt;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::AtomicU64;

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

/// A number naming one thread for the whole life of the process (never reused, unlike a
/// thread-local's address); 0 is never given.
pub(crate) fn current_thread() -> u64 {
    /// The last number given to a thread. A plain counter even under loom: it orders nothing.
    static LAST: AtomicU64 = AtomicU64::new(0);
    let id = THREAD_ID.try_with(|id| {
        if id.get() == 0 {
            id.set(LAST.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
        }
        id.get()
    });
    // During the thread's exit, once its thread-locals are gone, it owns nothing any more.
    id.unwrap_or(u64::MAX)
}

#[cfg(not(loom))]
std::thread_local! {
    /// This thread's number, given on first use.
    static THREAD_ID: Cell<u64> = const { Cell::new(0) };
}

#[cfg(loom)]
loom::thread_local! {
    /// This thread's number, given on first use (loom's threads share one OS thread, so the
    /// model needs loom's thread-locals).
    static THREAD_ID: Cell<u64> = Cell::new(0);
}

/// A reactor's cross-thread part, shared by the reactor and each of its registrations.
pub(crate) struct Home {
    /// The thread the reactor was created on, the only one that may use its registrations.
    owner: u64,
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
}

impl Home {
    /// The home of a reactor created on this thread, polling `poll`, woken by `unparker`.
    pub(crate) fn new(poll: &mio::Poll, unparker: Unparker) -> io::Result<Home> {
        Ok(Home {
            owner: current_thread(),
            registry: poll.registry().try_clone()?,
            orphans: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
            unparker,
            counters: SharedCounters::default(),
        })
    }

    /// The epoll instance (this home's duplicate of its descriptor, open as long as the home):
    /// where the reactor's thread changes a level-triggered registration's interest.
    #[inline]
    pub(crate) fn epoll_fd(&self) -> RawFd {
        self.registry.as_raw_fd()
    }

    /// Whether this thread is the reactor's.
    #[inline]
    pub(crate) fn is_current_thread(&self) -> bool {
        current_thread() == self.owner
    }

    /// Panics unless this thread is the reactor's; `fd` names the object in the message.
    #[inline]
    #[track_caller]
    pub(crate) fn assert_current_thread(&self, fd: RawFd) {
        if !self.is_current_thread() {
            wrong_thread(fd);
        }
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
fn wrong_thread(fd: RawFd) -> ! {
    panic!(
        "tickless: an I/O object (fd {fd}) was used on a thread other than the core that \
         registered it. A tickless stream is Send so that it can be stored in Send futures and \
         types, but its readiness lives on one core: create it on the core that polls it, or \
         run the task that uses it there (tickless::task::spawn_local, or tickless::spawn from \
         that core), not on a tokio or std thread"
    )
}

impl fmt::Debug for Home {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Home")
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}
