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
//! The hand-over itself (`left`, `entered`, `stop`, the thread's loop and the future it
//! drives) is `runtime::tokio_hand_over`'s, whose `# Protocol` gives the ordering argument;
//! here are the runtime, and the thread's start and join.
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
    use std::sync::Arc;
    use std::thread::JoinHandle;

    use crate::runtime::tokio_hand_over::HandOver;
    use crate::sync::{lock, Mutex};
    use crate::worker::Core;

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
        hand_over: Arc<HandOver>,
        /// The thread, once started.
        thread: Mutex<Option<JoinHandle<()>>>,
    }

    impl StandIn {
        /// The stand-in for core 0 (`core`), if it has a tokio runtime.
        pub(in crate::runtime) fn new(core: &Core) -> StandIn {
            StandIn {
                inner: core.tokio().map(|t| Inner {
                    runtime: t.runtime().clone(),
                    hand_over: Arc::new(HandOver::new()),
                    thread: Mutex::new(None),
                }),
            }
        }

        /// A `block_on` starts: the thread gives the runtime back, and this waits until it has
        /// (the task it may be polling ends first), so that from here on core 0's tokio tasks
        /// run on this thread.
        pub(in crate::runtime) fn entered(&self) {
            let Some(inner) = &self.inner else { return };
            inner.hand_over.entered();
        }

        /// The `block_on` returned: the thread drives the runtime until the next one (started
        /// now, the first time).
        pub(in crate::runtime) fn left(&self) {
            let Some(inner) = &self.inner else { return };
            if !inner.hand_over.left() {
                return;
            }
            let mut thread = lock(&inner.thread);
            if thread.is_some() {
                return;
            }
            let runtime = inner.runtime.clone();
            let hand_over = inner.hand_over.clone();
            match std::thread::Builder::new()
                .name("tickless-core-0-tokio".into())
                .spawn(move || hand_over.drive(|turn| runtime.block_on(turn)))
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
            inner.hand_over.stop();
            let thread = lock(&inner.thread).take();
            if let Some(thread) = thread {
                // Its tokio tasks' panics are tokio's to catch: it ends by returning.
                let _ = thread.join();
            }
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
