//! The core running on this thread: found through the I/O crate's one thread-local slot, which
//! holds the current reactor and, when a runtime entered it, its core.

use std::rc::Rc;

use tickless_io::EnterGuard;

use crate::worker::Core;

/// The message every API that needs a runtime panics with outside one.
pub(crate) const NO_RUNTIME: &str =
    "this function must be called from a task or `block_on` of a tickless runtime";

/// Runs `f` with the core of this thread; `None` outside a runtime (or during thread exit).
pub(crate) fn with_current<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    tickless_io::context::with_owner(f)
}

/// Makes a core (and its reactor) current on this thread until dropped, then restores what was
/// current before (nothing, except while a runtime is dropped inside another).
pub(crate) struct Entered {
    /// The reactor's guard, which restores the previous slot.
    _guard: EnterGuard,
}

impl Core {
    /// Makes this core current on this thread.
    ///
    /// # Panics
    ///
    /// If a core is already current here: runtimes do not nest.
    pub(crate) fn enter(self: &Rc<Self>) -> Entered {
        assert!(
            !tickless_io::context::has_owner(),
            "cannot start a tickless runtime from within a runtime: `block_on` was called \
             from a task or from inside another `block_on`"
        );
        self.enter_for_shutdown()
    }

    /// Makes this core current even inside another runtime's context, for its shutdown: the
    /// destructors of its tasks must find their own core (its live-task set, its timers).
    pub(crate) fn enter_for_shutdown(self: &Rc<Self>) -> Entered {
        Entered {
            _guard: self.reactor().enter_with(self.as_owner()),
        }
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
