//! The core running on this thread, in a thread-local of its own: every timer, spawn and task
//! poll looks it up, so it holds the core itself (no downcast through the reactor's slot).
//! [`Core::enter`] sets it together with the core's reactor, and its guard restores both.
//!
//! The look-up is on the hot path of every timer (a request's timeout looks it up three times:
//! the clock read, the insert, the cancel), so the core is found through a plain pointer in a
//! thread-local without a destructor (one load), beside the `Rc` that keeps it alive: the
//! thread-local that owns the `Rc` has a destructor, and each access to it checks its state and
//! its `RefCell` (about 15 instructions of the 300 a timeout costs).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use tickless_io::EnterGuard;

use crate::worker::Core;

/// The message every API that needs a runtime panics with outside one.
pub(crate) const NO_RUNTIME: &str =
    "this function must be called from a task or `block_on` of a tickless runtime";

thread_local! {
    /// The core entered on this thread, if any: what keeps it alive while it is current.
    static CURRENT: RefCell<Option<Rc<Core>>> = const { RefCell::new(None) };
    /// The same core as a plain pointer (null when none), for the look-up.
    ///
    /// Invariant: it is null, or it points to the core that `CURRENT` holds. Only
    /// [`Core::enter_for_shutdown`] and [`Entered`]'s drop write either, and they write both.
    static CURRENT_PTR: Cell<*const Core> = const { Cell::new(std::ptr::null()) };
}

/// Runs `f` with the core of this thread; `None` outside a runtime (or during thread exit).
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    // A thread-local without a destructor is never destroyed: `with` does not fail.
    let core = CURRENT_PTR.with(Cell::get);
    if core.is_null() {
        return None;
    }
    // SAFETY: a non-null `CURRENT_PTR` points to the core `CURRENT` holds an `Rc` of (the
    // invariant above), so the core is alive now. It stays alive while `f` runs: only an
    // `Entered`'s drop takes that `Rc` out of `CURRENT`, and the `Entered` that set this
    // pointer belongs to a caller further down this thread's stack (`block_on`, the core's
    // thread, a shutdown), which `f` cannot reach; an `enter_for_shutdown` inside `f` keeps
    // it alive in its own `Entered`. `Core` is not `Sync`, and the reference is to this
    // thread's core, used on this thread only.
    Some(f(unsafe { &*core }))
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
        let ptr = previous.as_ref().map_or(std::ptr::null(), Rc::as_ptr);
        // Null first: the pointer never names a core that `CURRENT` does not hold.
        CURRENT_PTR.with(|c| c.set(std::ptr::null()));
        // During thread exit the slot may already be gone; then there is nothing to restore
        // (and `previous` is dropped with the closure, the pointer left null).
        let _was_current = CURRENT.try_with(|c| {
            let ours = c.replace(previous);
            CURRENT_PTR.with(|p| p.set(ptr));
            ours
        });
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
        // After `CURRENT` holds it: the pointer never names a core that `CURRENT` does not.
        CURRENT_PTR.with(|c| c.set(Rc::as_ptr(self)));
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
