//! This thread's current reactor, which new I/O objects register with.
//!
//! The executor keeps its current core in a thread-local of its own, set and restored by the
//! same guard that enters the core's reactor here, so the two cannot disagree; the lookup on
//! every timer and spawn then needs no downcast.

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;

use crate::home::Home;
use crate::reactor::Reactor;

#[cfg(not(loom))]
thread_local! {
    /// The reactor entered on this thread, if any.
    static CURRENT: RefCell<Option<Rc<Reactor>>> = const { RefCell::new(None) };
    /// The address of that reactor's [`Home`] (0: none), what a registration compares its own
    /// with on every use: one plain thread-local read.
    static CURRENT_HOME: Cell<usize> = const { Cell::new(0) };
}

#[cfg(loom)]
loom::thread_local! {
    /// The reactor entered on this thread, if any (loom's threads share one OS thread, so the
    /// models need loom's thread-locals).
    static CURRENT: RefCell<Option<Rc<Reactor>>> = RefCell::new(None);
    /// The address of that reactor's [`Home`] (0: none).
    static CURRENT_HOME: Cell<usize> = Cell::new(0);
}

/// The address `home` has in [`CURRENT_HOME`].
#[inline]
fn address(home: &Home) -> usize {
    std::ptr::from_ref(home) as usize
}

/// Whether `home`'s reactor is the one entered on this thread. A registration's `Arc<Home>`
/// keeps the address from being reused while the registration lives.
#[inline]
pub(crate) fn is_current(home: &Home) -> bool {
    // During the thread's exit, once its thread-locals are gone, nothing is current.
    CURRENT_HOME
        .try_with(|h| h.get() == address(home))
        .unwrap_or(false)
}

/// Makes `reactor` (or nothing) current, returning what was.
fn replace(reactor: Option<Rc<Reactor>>) -> Option<Rc<Reactor>> {
    let home = reactor.as_ref().map_or(0, |r| address(r.home()));
    // During thread exit the slots may already be gone; then there is nothing to restore.
    let _gone = CURRENT_HOME.try_with(|h| h.set(home));
    CURRENT.try_with(|c| c.replace(reactor)).ok().flatten()
}

/// The message of the error returned when no reactor is current.
const NO_RUNTIME: &str = "no tickless runtime is running on this thread";

/// Makes a reactor this thread's current one until dropped; from [`Reactor::enter`].
///
/// Dropping it restores what was current before. Guards nest, and must be dropped in reverse
/// order of creation (as scoping does naturally). It is `!Send`: it restores the thread it was
/// created on.
#[must_use = "the reactor stops being current when the guard is dropped"]
pub struct EnterGuard {
    /// What to restore on drop.
    previous: Option<Rc<Reactor>>,
}

impl std::fmt::Debug for EnterGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterGuard").finish_non_exhaustive()
    }
}

impl Reactor {
    /// Makes this reactor the thread's current one until the guard drops.
    pub fn enter(self: &Rc<Self>) -> EnterGuard {
        let previous = replace(Some(Rc::clone(self)));
        EnterGuard { previous }
    }

    /// The reactor current on this thread.
    ///
    /// # Errors
    ///
    /// An error of kind [`Other`](io::ErrorKind::Other) with the message "no tickless runtime is
    /// running on this thread" if no reactor is entered (or the thread is exiting).
    pub fn current() -> io::Result<Rc<Reactor>> {
        CURRENT
            .try_with(|c| c.borrow().clone())
            .ok()
            .flatten()
            .ok_or_else(|| io::Error::other(NO_RUNTIME))
    }

    /// Runs `f` with the reactor current on this thread; `None` if none is (or the thread is
    /// exiting). The thread's slot is not borrowed while `f` runs.
    pub(crate) fn with_current<R>(f: impl FnOnce(&Rc<Reactor>) -> R) -> Option<R> {
        let reactor = CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()?;
        Some(f(&reactor))
    }
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let _ours = replace(self.previous.take());
    }
}
