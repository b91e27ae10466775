//! Core 0's tokio runtime while no thread is in `block_on` (`Builder::tokio_context`).
//!
//! A core drives its own tokio runtime (`worker::tokio_context`), but core 0 runs only inside
//! `block_on`. Between two calls, what was started on core 0's tokio runtime would stop: a
//! pooled connection's task, a `tokio::time` timer a task on another core waits for, a
//! `tokio::net` socket created on core 0 and used from core 1. So when `block_on` returns, a
//! stand-in thread drives that runtime (tokio's `block_on` on a future that ends when core 0
//! is run again), and gives it back when the next `block_on` starts: tokio's current-thread
//! runtime is driven by one thread at a time, and a thread whose `block_on` finds it held waits
//! for it (tokio's own hand-over).
//!
//! # Protocol
//!
//! `left` sets `left` under the lock and signals the condition variable; the thread, woken,
//! sets `driving` and drives the runtime on a future that checks `left` under the same lock
//! and, while it is set, stores its waker there. `entered` clears `left` and takes the waker
//! under the lock, wakes it after, and waits for `driving` to clear (the thread clears it under
//! the lock when its `block_on` returns, and signals). A poll either sees `left` cleared, or
//! stored its waker before `entered` took it: no wake is lost, and `entered` returns once the
//! runtime is free, so core 0's tokio tasks run on the `block_on` thread from then on. `stop`
//! is `entered` with `stop` set, and joins the thread.
//!
//! The thread starts at the first `left` (a runtime whose `main` stays in `block_on` never
//! has one), and has no tickless core: a tickless task its tokio tasks wake is woken from
//! another thread, and moves to a core that runs if core 0 does not (`Shared::leave`).

#[cfg(feature = "tokio-compat")]
pub(super) use with_tokio::StandIn;
#[cfg(not(feature = "tokio-compat"))]
pub(super) use without_tokio::StandIn;

#[cfg(feature = "tokio-compat")]
mod with_tokio {
    use std::future::poll_fn;
    use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
    use std::task::{Poll, Waker};
    use std::thread::JoinHandle;

    use crate::worker::Core;

    /// What the thread and core 0's `block_on` share.
    #[derive(Default)]
    struct State {
        /// No thread is in `block_on`: the stand-in drives the runtime.
        left: bool,
        /// The runtime stops: the thread ends.
        stop: bool,
        /// The thread holds the runtime (is in its `block_on`).
        driving: bool,
        /// The driving future's waker, while it waits for `left` to clear.
        waker: Option<Waker>,
    }

    /// The state and the condition variable the idle thread waits on.
    type Shared = (Mutex<State>, Condvar);

    /// Locks the state; a panic never leaves it half-written (every write is one field).
    fn lock(shared: &Shared) -> MutexGuard<'_, State> {
        shared.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Core 0's tokio runtime and the thread that drives it while no thread is in `block_on`.
    pub(in crate::runtime) struct StandIn {
        /// `None`: core 0 has no tokio runtime.
        inner: Option<Inner>,
    }

    /// The parts of a stand-in that has a runtime to drive.
    struct Inner {
        /// Core 0's tokio runtime.
        runtime: Arc<tokio::runtime::Runtime>,
        /// Shared with the thread.
        shared: Arc<Shared>,
        /// The thread, once started.
        thread: Mutex<Option<JoinHandle<()>>>,
    }

    impl StandIn {
        /// The stand-in for core 0 (`core`), if it has a tokio runtime.
        pub(in crate::runtime) fn new(core: &Core) -> StandIn {
            StandIn {
                inner: core.tokio().map(|t| Inner {
                    runtime: t.runtime().clone(),
                    shared: Arc::default(),
                    thread: Mutex::new(None),
                }),
            }
        }

        /// A `block_on` starts: the thread gives the runtime back, and this waits until it has
        /// (the task it may be polling ends first), so that from here on core 0's tokio tasks
        /// run on this thread.
        pub(in crate::runtime) fn entered(&self) {
            let Some(inner) = &self.inner else { return };
            let waker = {
                let mut state = lock(&inner.shared);
                state.left = false;
                state.waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
            let mut state = lock(&inner.shared);
            while state.driving {
                state = inner
                    .shared
                    .1
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }

        /// The `block_on` returned: the thread drives the runtime until the next one (started
        /// now, the first time).
        pub(in crate::runtime) fn left(&self) {
            let Some(inner) = &self.inner else { return };
            {
                let mut state = lock(&inner.shared);
                if state.stop {
                    return;
                }
                state.left = true;
            }
            inner.shared.1.notify_all();
            let mut thread = inner.thread.lock().unwrap_or_else(PoisonError::into_inner);
            if thread.is_some() {
                return;
            }
            let runtime = inner.runtime.clone();
            let shared = inner.shared.clone();
            match std::thread::Builder::new()
                .name("tickless-core-0-tokio".into())
                .spawn(move || drive(&runtime, &shared))
            {
                Ok(t) => *thread = Some(t),
                // Nothing to return an error to (a guard's drop): say it. Core 0's tokio
                // runtime then waits for the next `block_on`, as tokio's current-thread does.
                Err(e) => eprintln!(
                    "tickless: starting the thread that drives core 0's tokio runtime outside \
                     `block_on`: {e}"
                ),
            }
        }

        /// The runtime stops: ends the thread and waits for it.
        pub(in crate::runtime) fn stop(&self) {
            let Some(inner) = &self.inner else { return };
            let waker = {
                let mut state = lock(&inner.shared);
                state.stop = true;
                state.waker.take()
            };
            inner.shared.1.notify_all();
            if let Some(waker) = waker {
                waker.wake();
            }
            let thread = inner
                .thread
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(thread) = thread {
                // Its tokio tasks' panics are tokio's to catch: it ends by returning.
                let _ = thread.join();
            }
        }
    }

    /// Clears `driving` when dropped, and wakes whoever waits for it.
    struct Released<'a>(&'a Shared);

    impl Drop for Released<'_> {
        fn drop(&mut self) {
            lock(self.0).driving = false;
            self.0 .1.notify_all();
        }
    }

    /// The thread's body: drive the runtime whenever core 0 is left, until the stop.
    fn drive(runtime: &tokio::runtime::Runtime, shared: &Shared) {
        loop {
            {
                let mut state = lock(shared);
                while !state.left && !state.stop {
                    state = shared.1.wait(state).unwrap_or_else(PoisonError::into_inner);
                }
                if state.stop {
                    return;
                }
                state.driving = true;
            }
            // Whatever this block_on ends with (tokio's tasks' panics are tokio's to catch),
            // a `block_on` waiting in `entered` is told the runtime is free.
            let _released = Released(shared);
            runtime.block_on(poll_fn(|cx| {
                let mut state = lock(shared);
                if !state.left || state.stop {
                    return Poll::Ready(());
                }
                if !state
                    .waker
                    .as_ref()
                    .is_some_and(|w| w.will_wake(cx.waker()))
                {
                    state.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }));
        }
    }
}

#[cfg(not(feature = "tokio-compat"))]
mod without_tokio {
    use crate::worker::Core;

    /// Without the `tokio-compat` feature, core 0 has no tokio runtime to drive.
    pub(in crate::runtime) struct StandIn;

    impl StandIn {
        /// Nothing to drive.
        pub(in crate::runtime) fn new(_core: &Core) -> StandIn {
            StandIn
        }

        /// Nothing to give back.
        pub(in crate::runtime) fn entered(&self) {}

        /// Nothing to drive.
        pub(in crate::runtime) fn left(&self) {}

        /// No thread to end.
        pub(in crate::runtime) fn stop(&self) {}
    }
}
