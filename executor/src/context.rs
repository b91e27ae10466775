//! The core running on this thread, in a thread-local of its own: every timer, spawn and task
//! poll looks it up, so it names the core itself (no downcast through the reactor's slot).
//! [`Core::enter`] sets it together with the core's reactor, and its guard restores both.
//!
//! The look-up is on the hot path of every timer (a request's timeout looks it up three times:
//! the clock read, the insert, the cancel), so the core is found through a plain pointer in a
//! thread-local without a destructor: one load, where a thread-local holding an `Rc` has a
//! destructor, and each access to it checks its state (and a `RefCell` its borrow). What keeps
//! the core alive is the [`Entered`] guard that made it current, on this thread's stack.
//!
//! Having no destructor, the thread-local is never destroyed: a runtime kept in a thread-local
//! of the user's and dropped at the thread's exit still enters its core for its shutdown (a
//! thread-local holding an `Rc` could be gone by then, and entering it would abort).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use tickless_io::internal::EnterGuard;

use crate::blocking::BlockingPool;
use crate::catch::Counting;
use crate::worker::shared::{Peers, Shared};
use crate::worker::Core;

/// The message every API that needs a runtime panics with outside one.
pub(crate) const NO_RUNTIME: &str =
    "this function must be called from a task or `block_on` of a tickless runtime";

thread_local! {
    /// The core entered on this thread (null when none).
    ///
    /// Invariant: it is null, or it points to the core held by the innermost live [`Entered`]
    /// of this thread, which set it. Only [`Core::enter_for_shutdown`] and `Entered`'s drop
    /// write it; guards live on the stack, so they are dropped innermost first, each putting
    /// back the pointer of the guard outside it (which still holds its core).
    static CURRENT: Cell<*const Core> = const { Cell::new(std::ptr::null()) };
}

/// Runs `f` with the core of this thread; `None` outside a runtime.
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    // A thread-local without a destructor is never destroyed: `with` does not fail.
    let core = CURRENT.with(Cell::get);
    if core.is_null() {
        return None;
    }
    // SAFETY: a non-null `CURRENT` points to the core the innermost live `Entered` of this
    // thread holds an `Rc` of (the invariant above), so the core is alive now. It stays alive
    // while `f` runs: that guard belongs to a caller further down this thread's stack
    // (`block_on`, the core's thread, a shutdown), which `f` cannot reach or drop; an
    // `enter_for_shutdown` inside `f` makes a guard of its own and puts this pointer back when
    // it drops. `Core` is not `Sync`, and the reference is to this thread's core, used on this
    // thread only.
    Some(f(unsafe { &*core }))
}

/// Makes a core (and its reactor) current on this thread until dropped, then restores what was
/// current before (nothing, except while a runtime is dropped inside another). `!Send` (it
/// holds an `Rc`): it is dropped on the thread that made it.
pub(crate) struct Entered {
    /// The core's panic counters made current for `catch`; dropped (restoring the previous
    /// ones) before `_core`, which keeps them valid.
    _counting: Counting,
    /// The core made current: held, so that the pointer in `CURRENT` stays valid.
    _core: Rc<Core>,
    /// The core current before (null: none), held by the guard outside this one.
    previous: *const Core,
    /// The reactor's guard, which restores the previous reactor after `drop` restored the core.
    _guard: EnterGuard,
}

impl Drop for Entered {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// Panics if a core is current on this thread: runtimes do not nest.
pub(crate) fn assert_not_in_runtime() {
    assert!(
        with_current(|_| ()).is_none(),
        "cannot start a tickless runtime from within a runtime: `block_on` was called from a \
         task or from inside another `block_on`"
    );
}

impl Core {
    /// Makes this core current on this thread.
    ///
    /// # Panics
    ///
    /// If a core is already current here: runtimes do not nest.
    pub(crate) fn enter(self: &Rc<Self>) -> Entered {
        assert_not_in_runtime();
        self.enter_for_shutdown()
    }

    /// Makes this core current even inside another runtime's context, for its shutdown: the
    /// destructors of its tasks must find their own core (its live-task set, its timers).
    pub(crate) fn enter_for_shutdown(self: &Rc<Self>) -> Entered {
        let _guard = self.reactor().enter();
        let previous = CURRENT.with(|c| c.replace(Rc::as_ptr(self)));
        // SAFETY: the counters are a field of this core, which the guard holds an `Rc` of in
        // `_core`, a field dropped after `_counting`; `Entered` is dropped on this thread, in
        // the reverse order of its making (see `CURRENT`), and so is the `Counting` in it.
        let _counting = unsafe { Counting::new(self.caught()) };
        Entered {
            _counting,
            _core: Rc::clone(self),
            previous,
            _guard,
        }
    }
}

/// The index of the core running the caller.
///
/// There is no `try_` form: [`Handle::try_current`](crate::Handle::try_current) is the one
/// that does not panic (`Handle::try_current().map(|h| h.core())` is this core's index on a
/// core's thread). Inside a [`spawn_blocking`](crate::task::spawn_blocking) closure it names
/// the core that spawned the job, where this panics: no core runs on the pool's thread.
///
/// # Panics
///
/// Where no core of a tickless runtime runs: outside one, and on its blocking pool's threads.
///
/// # Examples
///
/// ```
/// let rt = tickless::Builder::new().cores(2).build()?;
/// assert_eq!(rt.block_on(async { tickless::core_id() }), 0); // `block_on` runs on core 0
/// let on_core_1 = rt.handle(1).spawn(async { tickless::core_id() });
/// assert_eq!(on_core_1.join().unwrap(), 1);
/// # std::io::Result::Ok(())
/// ```
pub fn core_id() -> usize {
    with_current(|c| c.id().index).expect(NO_RUNTIME)
}

/// What a `spawn_blocking` thread runs its closure in: the runtime of the core that spawned
/// it, as tokio's blocking threads enter their runtime's handle. [`Handle::current`], its
/// `try_current` and [`spawn`] find it where no core runs on the thread; with a tokio context,
/// the spawning core's tokio runtime is entered too (`tokio::runtime::Handle::current`).
///
/// [`Handle::current`]: crate::Handle::current
/// [`spawn`]: crate::spawn
pub(crate) struct Lent {
    /// The spawning core's parts.
    core: LentCore,
    /// The spawning core's tokio runtime, if it has a tokio context.
    #[cfg(feature = "tokio-compat")]
    tokio: Option<tokio::runtime::Handle>,
}

/// A core lent to a thread that does not run it: its shared half, the runtime's cores and its
/// blocking pool (a `Handle`'s parts).
pub(crate) type LentCore = (Arc<Shared>, Arc<Peers>, Arc<BlockingPool>);

thread_local! {
    /// The core lent to this thread by the blocking job it runs (`None`: none). Only
    /// [`Lent::run`] writes it, and puts back what was there when it returns or unwinds.
    static LENT: RefCell<Option<LentCore>> = const { RefCell::new(None) };
}

impl Lent {
    /// The context of `core`, for a blocking job it spawns.
    pub(crate) fn of(core: &Core) -> Lent {
        Lent {
            core: (
                core.shared().clone(),
                core.peers().clone(),
                core.blocking().clone(),
            ),
            #[cfg(feature = "tokio-compat")]
            tokio: core.tokio().map(|t| t.runtime().handle().clone()),
        }
    }

    /// Runs `f` with this context entered on the thread, then puts back what was (on unwind
    /// too).
    pub(crate) fn run<R>(self, f: impl FnOnce() -> R) -> R {
        /// Puts back the thread's previous lent core.
        struct Restore(Option<LentCore>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                // Taken out under the borrow and dropped after it.
                let mine = LENT.try_with(|l| l.replace(previous));
                drop(mine);
            }
        }
        #[cfg(feature = "tokio-compat")]
        let _tokio = self.tokio.as_ref().map(tokio::runtime::Handle::enter);
        let _restore = Restore(LENT.try_with(|l| l.replace(Some(self.core))).ok().flatten());
        f()
    }
}

/// The core lent to this thread by the blocking job it runs: `Ok(None)` where none is,
/// `Err(())` once the thread-local is destroyed (the thread is exiting).
pub(crate) fn lent() -> Result<Option<LentCore>, ()> {
    LENT.try_with(|l| l.borrow().clone()).map_err(|_| ())
}
