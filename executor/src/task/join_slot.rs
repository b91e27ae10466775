//! The slot through which a task hands its result to its `JoinHandle`, from its core to
//! whichever thread awaits, joins or drops the handle.
//!
//! # Protocol
//!
//! One mutex guards the result and the waiting waker, so completing and awaiting cannot miss
//! each other: the completer stores the result and takes the waker under the lock, then wakes
//! it outside; the awaiter takes the result or leaves its waker under the same lock. The first
//! completion wins: a task that finished and is then dropped (or dropped by a shutdown without
//! finishing) completes once. A handle that is dropped detaches the slot under the same lock:
//! a result already stored is handed to the dropping side, one stored later is handed back to
//! the completer, so that whoever drops it can do so under a panic guard (a result is user
//! data, and its destructor may panic). `loom-tests/tests/join_slot.rs` checks completion
//! racing an await, a drop and a detach on another thread.

use std::task::{Context, Poll, Waker};

use crate::sync::{lock, AtomicBool, Mutex, Ordering};
use crate::task::id::Id;

/// What the mutex guards.
struct State<R> {
    /// The result, until taken.
    value: Option<R>,
    /// A result was stored (taken or not).
    finished: bool,
    /// Who to wake on completion.
    waker: Option<Waker>,
    /// The handle is gone: nobody will take a result.
    detached: bool,
}

/// A task's result slot, shared by the task and its handle.
pub struct JoinSlot<R> {
    /// The task's id (none for a blocking job's slot).
    task: Option<Id>,
    /// Set by `abort`; the task checks it at each poll.
    aborted: AtomicBool,
    /// The result and the waiter.
    state: Mutex<State<R>>,
}

impl<R> Default for JoinSlot<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R> JoinSlot<R> {
    /// An empty slot.
    pub fn new() -> Self {
        Self::with_task(None)
    }

    /// An empty slot, for task `id`.
    pub(crate) fn for_task(id: Id) -> Self {
        Self::with_task(Some(id))
    }

    /// An empty slot, for `task` if any.
    fn with_task(task: Option<Id>) -> Self {
        JoinSlot {
            task,
            aborted: AtomicBool::new(false),
            state: Mutex::new(State {
                value: None,
                finished: false,
                waker: None,
                detached: false,
            }),
        }
    }

    /// The task's id, if the slot is a task's.
    pub(crate) fn task_id(&self) -> Option<Id> {
        self.task
    }

    /// Stores the task's result and wakes the waiter, unless a result was stored already.
    /// Returns the value back if nobody will take it (a result was stored already, or the
    /// handle is gone): the caller drops it, under its own panic guard.
    pub fn complete(&self, value: R) -> Option<R> {
        let waker = {
            let mut s = lock(&self.state);
            if s.finished {
                return Some(value);
            }
            s.finished = true;
            if s.detached {
                return Some(value);
            }
            s.value = Some(value);
            s.waker.take()
        };
        // Outside the lock: the waker may run anything, even on this thread.
        if let Some(w) = waker {
            w.wake();
        }
        None
    }

    /// The handle is dropped: nobody will take a result. Returns one already stored, for the
    /// caller to drop (under its own panic guard).
    pub fn detach(&self) -> Option<R> {
        let mut s = lock(&self.state);
        s.detached = true;
        s.waker = None;
        s.value.take()
    }

    /// Takes the result, or registers `cx`'s waker.
    ///
    /// # Panics
    ///
    /// If the result was already taken.
    pub fn poll_take(&self, cx: &mut Context<'_>) -> Poll<R> {
        let mut s = lock(&self.state);
        if let Some(v) = s.value.take() {
            return Poll::Ready(v);
        }
        assert!(!s.finished, "`JoinHandle` polled after it completed");
        match &mut s.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Whether a result was stored.
    pub fn is_finished(&self) -> bool {
        lock(&self.state).finished
    }

    /// Asks the task to stop at its next poll.
    pub fn abort(&self) {
        self.aborted.store(true, Ordering::Release);
    }

    /// Whether `abort` was called.
    pub fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::Acquire)
    }
}
