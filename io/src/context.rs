//! This thread's current reactor, which new I/O objects register with.

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
/// Dropping it restores the reactor that was current before. Guards nest, and must be dropped
/// in reverse order of creation (as scoping does naturally). It is `!Send`: it restores the
/// thread it was created on.
#[must_use = "the reactor stops being current when the guard is dropped"]
#[derive(Debug)]
pub struct EnterGuard {
    /// The reactor to restore on drop.
    previous: Option<Rc<Reactor>>,
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
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        // During thread exit the slot may already be gone; then there is nothing to restore.
        let _was_current = CURRENT.try_with(|c| c.replace(previous));
    }
}
