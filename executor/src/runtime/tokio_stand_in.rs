//! Core 0 while no thread is in `block_on` (`Builder::tokio_context`).
//!
//! A core drives its own tokio runtime (`worker::tokio_context`), but core 0 runs only inside
//! `block_on`. Between two calls, what was started on core 0's tokio runtime would stop: a
//! pooled connection's task, a `tokio::time` timer a task on another core waits for, a
//! `tokio::net` socket created on core 0 and used from core 1; and a `tokio::spawn`ed task
//! that uses tickless's own streams and timers (axum's `on_upgrade` over a tickless stream)
//! would find them in core 0's reactor and wheel, which nobody polls, or be polled where no
//! core runs, where they fail. Core 0's `tickless::spawn` tasks do not need this (they move to
//! a core that runs, and their streams and timers follow them), but a tokio task cannot move
//! out of its runtime.
//!
//! So when `block_on` returns, a stand-in thread runs core 0 itself: it takes core 0's lease,
//! as a `block_on` would, and runs core 0's loop (and with it core 0's tokio runtime, which
//! the loop parks in) on a future that ends when a thread comes into `block_on` again; that
//! thread waits for the stand-in to give core 0 back. Where core 0 cannot leave the thread of
//! its last `block_on` (a `spawn_local` task of it lives) or its clock is paused (it moves only
//! in `block_on`, as tokio's), the thread drives core 0's tokio runtime alone, as before:
//! tokio's own tasks, timers and sockets go on, a tickless stream or timer used by one of them
//! waits for the next `block_on`.
//!
//! The hand-over itself (`entered`, `left`, `stop`, the thread's loop and the future it
//! drives) is `runtime::tokio_hand_over`'s, whose `# Protocol` gives the ordering argument;
//! here are the runtime, and the thread's start and join; running core 0 is `core_zero`'s
//! (`DriveCoreZero`).
//!
//! The thread starts at the first `left` (a runtime whose `main` stays in `block_on` never
//! has one). Its cost: one thread while the runtime lives (started the first time `block_on`
//! returns), asleep in core 0's wait while core 0 has nothing to do.

#[cfg(feature = "tokio-compat")]
pub(super) use with_tokio::{DriveCoreZero, StandIn};
#[cfg(not(feature = "tokio-compat"))]
pub(super) use without_tokio::StandIn;

#[cfg(feature = "tokio-compat")]
mod with_tokio {
    use std::sync::Arc;
    use std::thread::JoinHandle;

    use crate::runtime::tokio_hand_over::{HandOver, Turn};
    use crate::sync::{lock, Mutex};
    use crate::worker::Core;

    /// Runs core 0 on the stand-in thread (`core_zero`'s, which holds the core and its lease).
    pub(in crate::runtime) trait DriveCoreZero: Send + Sync {
        /// Runs core 0 on this thread, its tokio runtime with it, until `turn` completes; or,
        /// where core 0 cannot leave the thread of its last `block_on` (a `spawn_local` task
        /// lives) or its clock is paused, gives `turn` back untouched.
        fn drive<'a>(&self, turn: Turn<'a>) -> Option<Turn<'a>>;
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
        hand_over: Arc<HandOver>,
        /// Core 0 itself, which the thread runs where it can.
        zero: Arc<dyn DriveCoreZero>,
        /// The thread, once started.
        thread: Mutex<Option<JoinHandle<()>>>,
    }

    impl StandIn {
        /// The stand-in for core 0 (`core`, run through `zero`), if it has a tokio runtime.
        pub(in crate::runtime) fn new(core: &Core, zero: Arc<dyn DriveCoreZero>) -> StandIn {
            StandIn {
                inner: core.tokio().map(|t| Inner {
                    runtime: t.runtime().clone(),
                    hand_over: Arc::new(HandOver::new()),
                    zero,
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
            let zero = inner.zero.clone();
            // Core 0 itself where it can be run here, its tokio runtime alone where not.
            let drive = move || {
                hand_over.drive(|turn: Turn<'_>| {
                    if let Some(turn) = zero.drive(turn) {
                        runtime.block_on(turn);
                    }
                });
            };
            match std::thread::Builder::new()
                .name("tickless-core-0-tokio".into())
                .spawn(drive)
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
        pub(in crate::runtime) fn new<T>(_core: &Core, _zero: std::sync::Arc<T>) -> StandIn {
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
