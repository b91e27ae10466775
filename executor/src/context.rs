//! The core running on this thread, in a thread-local of its own: every timer, spawn and task
//! poll looks it up, so it holds the core itself (no downcast through the reactor's slot).
//! [`Core::enter`] sets it together with the core's reactor, and its guard restores both.

use std::cell::RefCell;
use std::rc::Rc;

use tickless_io::EnterGuard;

use crate::worker::Core;

/// The message every API that needs a runtime panics with outside one.
pub(crate) const NO_RUNTIME: &str =
    "this function must be called from a task or `block_on` of a tickless runtime";

thread_local! {
    /// The core entered on this thread, if any.
    static CURRENT: RefCell<Option<Rc<Core>>> = const { RefCell::new(None) };
}

/// Runs `f` with the core of this thread; `None` outside a runtime (or during thread exit).
///
/// `f` must not enter a core on this thread (the slot is borrowed while it runs).
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    CURRENT
        .try_with(|c| c.borrow().as_deref().map(f))
        .ok()
        .flatten()
}

/// Makes a core (and its reactor) current on this thread until dropped, then restores what was
/// current before (nothing, except while a runtime is dropped inside another).
pub(crate) struct Entered {
    /// The core current before.
    previous: Option<Rc<Core>>,
    /// The reactor's guard, which restores the previous reactor after `drop` restored the core.
    _guard: EnterGuard,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.previous.take();
        // During thread exit the slot may already be gone; then there is nothing to restore.
        let _was_current = CURRENT.try_with(|c| c.replace(previous));
    }
}

impl Core {
    /// Makes this core current on this thread.
    ///
    /// # Panics
    ///
    /// If a core is already current here: runtimes do not nest.
    pub(crate) fn enter(self: &Rc<Self>) -> Entered {
        assert!(
            with_current(|_| ()).is_none(),
            "cannot start a tickless runtime from within a runtime: `block_on` was called \
             from a task or from inside another `block_on`"
        );
        self.enter_for_shutdown()
    }

    /// Makes this core current even inside another runtime's context, for its shutdown: the
    /// destructors of its tasks must find their own core (its live-task set, its timers).
    pub(crate) fn enter_for_shutdown(self: &Rc<Self>) -> Entered {
        let _guard = self.reactor().enter();
        let previous = CURRENT.with(|c| c.borrow_mut().replace(Rc::clone(self)));
        Entered { previous, _guard }
    }
}

/// The index of the core running the caller.
///
/// # Panics
///
/// Outside a tickless runtime.
pub fn core_id() -> usize {
    with_current(|c| c.id().index).expect(NO_RUNTIME)
}
