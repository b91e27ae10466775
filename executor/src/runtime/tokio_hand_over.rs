//! [`HandOver`]: who drives core 0's tokio runtime, the stand-in thread or the thread in
//! `block_on`, and how one gives it to the other (`runtime::tokio_stand_in` starts and joins
//! the thread; this is the protocol between them).
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
    /// No thread is in `block_on`: the stand-in drives the runtime.
    left: bool,
    /// The runtime stops: the thread ends.
    stop: bool,
    /// The thread holds the runtime (is in its `block_on`).
    driving: bool,
    /// The driving future's waker, while it waits for `left` to clear.
    waker: Option<Waker>,
}

/// The hand-over of core 0's tokio runtime between the stand-in thread ([`drive`]) and the
/// thread in `block_on` ([`entered`], [`left`]), and its end ([`stop`]).
///
/// # Protocol
///
/// `left` sets `left` under the lock and signals the condition variable; the thread, woken,
/// sets `driving` and drives the runtime on a [`Turn`], a future that checks `left` under the
/// same lock and, while it is set, stores its waker there. `entered` clears `left` and takes
/// the waker under the lock, wakes it after, and waits for `driving` to clear (the thread
/// clears it under the lock when its `block_on` returns, and signals). A poll either sees
/// `left` cleared, or stored its waker before `entered` took it: no wake is lost, and
/// `entered` returns once the runtime is free, so core 0's tokio tasks run on the `block_on`
/// thread from then on. `stop` is `entered` with `stop` set, less the wait (the caller joins
/// the thread): the thread, in its wait or in a turn, sees `stop` and returns.
///
/// [`drive`]: HandOver::drive
/// [`entered`]: HandOver::entered
/// [`left`]: HandOver::left
/// [`stop`]: HandOver::stop
#[derive(Default)]
pub struct HandOver {
    /// The flags and the waker, each written under this lock.
    state: Mutex<State>,
    /// Signalled when `left` or `stop` is set (the thread waits for them) and when `driving`
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

    /// A `block_on` starts: the thread gives the runtime back, and this waits until it has
    /// (the task it may be polling ends first).
    pub fn entered(&self) {
        let waker = {
            let mut state = lock(&self.state);
            state.left = false;
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

    /// The `block_on` returned: the thread drives the runtime until the next one. False if
    /// the runtime stops (the thread is not to be started).
    pub fn left(&self) -> bool {
        {
            let mut state = lock(&self.state);
            if state.stop {
                return false;
            }
            state.left = true;
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

    /// The thread's body: whenever core 0 is left, `block_on` a [`Turn`] (the runtime's
    /// `block_on`, which runs its tasks until the turn ends), until the stop.
    pub fn drive(&self, mut block_on: impl FnMut(Turn<'_>)) {
        loop {
            {
                let mut state = lock(&self.state);
                while !state.left && !state.stop {
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

/// The stand-in's turn with the runtime: ends when core 0 is entered or the runtime stops.
#[must_use = "a future does nothing unless polled"]
pub struct Turn<'a>(&'a HandOver);

impl Future for Turn<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = lock(&self.0.state);
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
