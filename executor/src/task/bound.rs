//! Core 0's `spawn_local` tasks, bound to the thread that spawned them.
//!
//! Core 0 runs on whichever thread calls `block_on` (so that a `Runtime` is `Send` and `Sync`,
//! as tokio's), one thread at a time. A `!Send` future must still be polled and dropped on
//! one thread only. So core 0 wraps each `spawn_local` future in a [`Bound`], which knows the
//! thread that spawned it and keeps count of the live ones (`Shared::local_tasks`):
//!
//! - `block_on` on another thread refuses to run (it panics, saying why) while any is alive,
//!   so a bound future is polled on its thread only (`Bound::poll` checks it again in debug
//!   builds);
//! - a bound future dropped on another thread (the runtime dropped there while it lived) is
//!   leaked, with the box it is pinned in, instead of dropped: its destructor never runs, and
//!   its memory is never reused, as pinning promises. The task's handle still resolves
//!   (cancelled), and the runtime's shutdown reports the leak
//!   ([`ShutdownError::leaked_local`](crate::ShutdownError::leaked_local)).
//!
//! The other cores never change threads; their `spawn_local` tasks are async-task's local tasks,
//! which check their thread themselves.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::worker::id::thread_token;
use crate::worker::shared::Shared;

/// A `!Send` future of core 0, polled and dropped only on the thread that spawned it.
pub(crate) struct Bound<F> {
    /// In a box of its own, so that a drop elsewhere can leak it whole; `None` once dropped.
    future: Option<Pin<Box<F>>>,
    /// The [`thread_token`] of the thread that spawned it.
    home: u64,
    /// Core 0's shared half, which counts the live ones.
    shared: Arc<Shared>,
}

impl<F> Bound<F> {
    /// `future`, bound to this thread and counted on `shared`'s core.
    pub(crate) fn new(future: F, shared: Arc<Shared>) -> Bound<F> {
        shared.add_local();
        Bound {
            future: Some(Box::pin(future)),
            home: thread_token(),
            shared,
        }
    }
}

impl<F: Future> Future for Bound<F> {
    type Output = F::Output;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // `block_on` does not move core 0 while a bound task lives (it checks, and only it
        // polls core 0's tasks), so this is checked in debug builds only: on a fire's path it
        // was 1% of the instructions. (A failure costs this task only: the panic is caught.)
        debug_assert!(
            thread_token() == self.home,
            "tickless: a `spawn_local` task of core 0 was polled on another thread than the one \
             that spawned it"
        );
        let future = self.future.as_mut().expect("polled after its drop");
        future.as_mut().poll(cx)
    }
}

impl<F> Drop for Bound<F> {
    fn drop(&mut self) {
        let Some(future) = self.future.take() else {
            return;
        };
        let here = thread_token() == self.home;
        self.shared.remove_local(!here);
        if here {
            drop(future);
        } else {
            // Not its thread: neither its destructor nor a reuse of its pinned memory may run.
            std::mem::forget(future);
        }
    }
}
