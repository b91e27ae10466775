//! This thread's current reactor, which new I/O objects register with.
//!
//! The executor keeps its current core in a thread-local of its own, set and restored by the
//! same guard that enters the core's reactor here, so the two cannot disagree; the lookup on
//! every timer and spawn then needs no downcast.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;

use crate::reactor::Reactor;

thread_local! {
    /// The reactor entered on this thread, if any.
    static CURRENT: RefCell<Option<Rc<Reactor>>> = const { RefCell::new(None) };
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
        let previous = CURRENT.with(|c| c.borrow_mut().replace(Rc::clone(self)));
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
        let previous = self.previous.take();
        // During thread exit the slot may already be gone; then there is nothing to restore.
        let _was_current = CURRENT.try_with(|c| c.replace(previous));
    }
}
