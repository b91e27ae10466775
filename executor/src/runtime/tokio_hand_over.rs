//! [`HandOver`]: who drives core 0's tokio runtime (and, where it can, core 0 itself), the
//! stand-in thread or the thread in `block_on`, and how one gives it to the other
//! (`runtime::tokio_stand_in` starts and joins the thread; this is the protocol between them).
//!
//! Generic over what drives the stand-in's future (tokio's `Runtime::block_on` in
//! production), and on `crate::sync`'s lock and condition variable, so that
//! `loom-tests/tests/tokio_stand_in.rs` runs this code under loom with a loom `block_on`.

use std::future::Future;
use std::pin::Pin;
use std::sync::PoisonError;
use std::task::{Context, Poll, Waker};

use crate::sync::{lock, Condvar, Mutex, MutexGuard};

/// What the stand-in thread and core 0's `block_on` share.
#[derive(Default)]
struct State {
    /// The threads in core 0's `block_on` or on their way into it (from [`HandOver::entered`],
    /// before the lease, to [`HandOver::left`], after it): the stand-in drives only while
    /// there are none.
    inside: usize,
    /// The runtime stops: the thread ends.
    stop: bool,
    /// The thread holds the runtime (is in its `block_on`).
    driving: bool,
    /// The driving future's waker, while it waits for a thread to come in.
    waker: Option<Waker>,
}

/// The hand-over of core 0's tokio runtime between the stand-in thread ([`drive`]) and the
/// thread in `block_on` ([`entered`], [`left`]), and its end ([`stop`]).
///
/// # Protocol
///
/// A `block_on` calls `entered` before it takes core 0's lease and `left` after it gave it
/// back, so `inside` counts the threads that hold the lease or wait for it. `left` lowers
/// `inside` under the lock and signals the condition variable; the thread, woken with
/// `inside` at zero, sets `driving` and drives on a [`Turn`] (core 0 itself, the lease taken,
/// with the turn as its `block_on` future; or core 0's tokio runtime alone), a future that
/// checks `inside` under the same lock and, while it is zero, stores its waker there.
/// `entered` raises `inside` and takes the waker under the lock, wakes it after, and waits for
/// `driving` to clear (the thread clears it under the lock once its turn has returned, and
/// with it the lease, and signals). A poll either sees `inside` raised, or stored its waker
/// before `entered` took it: no wake is lost, and `entered` returns once the runtime (and the
/// lease) is free, so core 0 and its tokio tasks run on the `block_on` thread from then on. A
/// second `block_on` that comes in while the first holds the lease keeps `inside` above zero
/// when the first leaves, so the stand-in never takes the lease from a thread that waits for
/// it. `stop` is `entered` with `stop` set, less the wait (the caller joins the thread): the
/// thread, in its wait or in a turn, sees `stop` and returns.
///
/// [`drive`]: HandOver::drive
/// [`entered`]: HandOver::entered
/// [`left`]: HandOver::left
/// [`stop`]: HandOver::stop
#[derive(Default)]
pub struct HandOver {
    /// The flags and the waker, each written under this lock.
    state: Mutex<State>,
    /// Signalled when `inside` falls or `stop` is set (the thread waits for them) and when `driving`
    /// clears (`entered` waits for it).
    changed: Condvar,
}

impl HandOver {
    /// A hand-over with the runtime on the `block_on` side (no thread has left it yet).
    pub fn new() -> HandOver {
        HandOver::default()
    }

    /// Waits on the condition variable (poisoning ignored, as `lock` does).
    fn wait<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed
            .wait(state)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A `block_on` starts (before it takes core 0's lease): the thread gives the runtime and
    /// core 0 back, and this waits until it has (the task it may be polling ends first).
    pub fn entered(&self) {
        let waker = {
            let mut state = lock(&self.state);
            state.inside += 1;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        let mut state = lock(&self.state);
        while state.driving {
            state = self.wait(state);
        }
    }

    /// A `block_on` returned (after it gave core 0's lease back): once none is left inside,
    /// the thread drives until the next one. False if the runtime stops (the thread is not to
    /// be started).
    pub fn left(&self) -> bool {
        {
            let mut state = lock(&self.state);
            state.inside -= 1;
            if state.stop {
                return false;
            }
        }
        self.changed.notify_all();
        true
    }

    /// The runtime stops: the thread ends (from its wait, or its turn ends). The caller then
    /// joins it.
    pub fn stop(&self) {
        let waker = {
            let mut state = lock(&self.state);
            state.stop = true;
            state.waker.take()
        };
        self.changed.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The thread's body: whenever no thread is in core 0's `block_on`, `block_on` a [`Turn`]
    /// (core 0's or its tokio runtime's `block_on`, which runs their tasks until the turn
    /// ends), until the stop.
    pub fn drive(&self, mut block_on: impl FnMut(Turn<'_>)) {
        loop {
            {
                let mut state = lock(&self.state);
                while state.inside > 0 && !state.stop {
                    state = self.wait(state);
                }
                if state.stop {
                    return;
                }
                state.driving = true;
            }
            // Whatever this block_on ends with (tokio's tasks' panics are tokio's to catch),
            // a `block_on` waiting in `entered` is told the runtime is free.
            let _released = Released(self);
            block_on(Turn(self));
        }
    }
}

/// The stand-in's turn with the runtime: ends when a thread comes into core 0's `block_on` or
/// the runtime stops.
#[must_use = "a future does nothing unless polled"]
pub struct Turn<'a>(&'a HandOver);

impl Future for Turn<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = lock(&self.0.state);
        if state.inside > 0 || state.stop {
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
    }
}

/// Clears `driving` when dropped, and wakes whoever waits for it.
struct Released<'a>(&'a HandOver);

impl Drop for Released<'_> {
    fn drop(&mut self) {
        lock(&self.0.state).driving = false;
        self.0.changed.notify_all();
    }
}
