//! This thread's current reactor, which new I/O objects register with, and the runtime core
//! that owns it.
//!
//! One thread-local holds both, so that "which reactor is current" and "which core is current"
//! can never disagree: the executor enters its core with [`Reactor::enter_with`] and finds it
//! again with [`with_owner`].

use std::any::Any;
use std::cell::RefCell;
use std::io;
use std::rc::Rc;

use crate::reactor::Reactor;

/// What is current on a thread.
struct Current {
    /// The reactor new I/O objects register with.
    reactor: Rc<Reactor>,
    /// Whatever entered the reactor on behalf of a runtime (the executor's core); `None` for a
    /// bare [`Reactor::enter`].
    owner: Option<Rc<dyn Any>>,
}

thread_local! {
    /// The reactor entered on this thread, and its owner, if any.
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
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
    previous: Option<Current>,
}

impl std::fmt::Debug for EnterGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterGuard").finish_non_exhaustive()
    }
}

impl Reactor {
    /// Makes this reactor the thread's current one until the guard drops.
    pub fn enter(self: &Rc<Self>) -> EnterGuard {
        self.enter_current(None)
    }

    /// Makes this reactor the thread's current one, on behalf of `owner` (a runtime's core),
    /// until the guard drops; [`with_owner`] finds `owner` meanwhile.
    pub fn enter_with(self: &Rc<Self>, owner: Rc<dyn Any>) -> EnterGuard {
        self.enter_current(Some(owner))
    }

    fn enter_current(self: &Rc<Self>, owner: Option<Rc<dyn Any>>) -> EnterGuard {
        let current = Current {
            reactor: Rc::clone(self),
            owner,
        };
        let previous = CURRENT.with(|c| c.borrow_mut().replace(current));
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
            .try_with(|c| c.borrow().as_ref().map(|c| Rc::clone(&c.reactor)))
            .ok()
            .flatten()
            .ok_or_else(|| io::Error::other(NO_RUNTIME))
    }

    /// Runs `f` with the reactor current on this thread; `None` if none is (or the thread is
    /// exiting). The thread's slot is not borrowed while `f` runs.
    pub(crate) fn with_current<R>(f: impl FnOnce(&Rc<Reactor>) -> R) -> Option<R> {
        let reactor = CURRENT
            .try_with(|c| c.borrow().as_ref().map(|c| Rc::clone(&c.reactor)))
            .ok()
            .flatten()?;
        Some(f(&reactor))
    }
}

/// Runs `f` with the owner of this thread's current reactor, if it is a `T`; `None` when no
/// reactor is current, it was entered without an owner or by another type, or the thread is
/// exiting.
///
/// `f` must not enter a reactor on this thread (the slot is borrowed while it runs).
pub fn with_owner<T: Any, R>(f: impl FnOnce(&T) -> R) -> Option<R> {
    CURRENT
        .try_with(|c| {
            let c = c.borrow();
            let owner = c.as_ref()?.owner.as_deref()?;
            owner.downcast_ref::<T>().map(f)
        })
        .ok()
        .flatten()
}

/// Whether an owner (a runtime's core) is current on this thread.
pub fn has_owner() -> bool {
    CURRENT
        .try_with(|c| c.borrow().as_ref().is_some_and(|c| c.owner.is_some()))
        .unwrap_or(false)
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        // During thread exit the slot may already be gone; then there is nothing to restore.
        let _was_current = CURRENT.try_with(|c| c.replace(previous));
    }
}
