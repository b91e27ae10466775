//! This thread's current reactor, which new I/O objects register with.
//!
//! The executor keeps its current core in a thread-local of its own, set and restored by the
//! same guard that enters the core's reactor here, so the two cannot disagree; the lookup on
//! every timer and spawn then needs no downcast.

use std::cell::{Cell, RefCell};
use std::io;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::home;
use crate::reactor::Reactor;

#[cfg(not(loom))]
thread_local! {
    /// The reactors entered on this thread, the current one last. Only an [`EnterGuard`]'s
    /// drop takes them out, and it takes out every reactor entered after its own as well.
    static ENTERED: RefCell<Vec<(u64, Rc<Reactor>)>> = const { RefCell::new(Vec::new()) };
    /// The number of the next entry into `ENTERED`, so that a guard knows its own.
    static NEXT_ENTRY: Cell<u64> = const { Cell::new(0) };
}

#[cfg(loom)]
loom::thread_local! {
    /// The reactors entered on this thread (loom's threads share one OS thread, so the models
    /// need loom's thread-locals).
    static ENTERED: RefCell<Vec<(u64, Rc<Reactor>)>> = RefCell::new(Vec::new());
    /// The number of the next entry into `ENTERED`.
    static NEXT_ENTRY: Cell<u64> = Cell::new(0);
}

/// The message of the error returned when no reactor is current.
const NO_RUNTIME: &str = "no tickless runtime is running on this thread";

/// Makes a reactor this thread's current one until dropped; from [`Reactor::enter`].
///
/// Dropping it makes current again the reactor that was current before it, and takes out
/// every reactor entered after it whose guard is still alive (a guard kept past the one
/// outside it, by `mem::forget` or by returning it, restores nothing and holds nothing). So
/// the thread holds a reactor only within the scope of the guard that entered it: a runtime's
/// reactor is never left behind on a thread the runtime has moved away from. It is `!Send`:
/// it restores the thread it was created on.
#[must_use = "the reactor stops being current when the guard is dropped"]
pub struct EnterGuard {
    /// How many reactors were entered here before this one: the stack's length to restore.
    depth: usize,
    /// The number of its entry: a guard that outlived the one outside it finds another entry
    /// (or none) at its depth, and leaves the stack alone.
    entry: u64,
    /// It belongs to the thread whose stack it restores.
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for EnterGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterGuard").finish_non_exhaustive()
    }
}

impl Reactor {
    /// Makes this reactor the thread's current one until the guard drops.
    pub fn enter(self: &Rc<Self>) -> EnterGuard {
        let entry = NEXT_ENTRY
            .try_with(|n| {
                n.set(n.get() + 1);
                n.get()
            })
            .unwrap_or(0);
        let depth = ENTERED
            .try_with(|e| {
                let mut e = e.borrow_mut();
                e.push((entry, Rc::clone(self)));
                e.len() - 1
            })
            // The thread is exiting: nothing can be entered any more.
            .unwrap_or(usize::MAX);
        if depth != usize::MAX {
            home::set_current(Some(self.home()));
        }
        EnterGuard {
            depth,
            entry,
            _not_send: PhantomData,
        }
    }

    /// Runs `f` with the reactor current on this thread. `f` gets a reference, never a
    /// handle of its own: the reactor of a runtime stays within the runtime's scope on this
    /// thread. The thread's slot is not borrowed while `f` runs.
    ///
    /// # Errors
    ///
    /// An error of kind [`Other`](io::ErrorKind::Other) with the message "no tickless runtime is
    /// running on this thread" if no reactor is entered (or the thread is exiting).
    pub fn with_current<R>(f: impl FnOnce(&Reactor) -> R) -> io::Result<R> {
        let reactor = ENTERED
            .try_with(|e| e.borrow().last().map(|(_, r)| Rc::clone(r)))
            .ok()
            .flatten()
            .ok_or_else(|| io::Error::other(NO_RUNTIME))?;
        Ok(f(&reactor))
    }
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        // Taken out under the borrow and dropped after it: a reactor's drop may look here.
        let left = ENTERED
            .try_with(|e| {
                let mut e = e.borrow_mut();
                if e.get(self.depth)
                    .is_none_or(|(entry, _)| *entry != self.entry)
                {
                    // Its entry was taken out by a guard outside it: nothing to restore.
                    return None;
                }
                let left = e.split_off(self.depth);
                home::set_current(e.last().map(|(_, r)| &**r.home()));
                Some(left)
            })
            .ok()
            .flatten();
        drop(left);
    }
}
