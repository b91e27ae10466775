//! Shutting a core down by ownership, on its own thread: every task's future is dropped here,
//! in the core's context, before the inbox closes; then the inbox refuses everything, and
//! what arrives after that holds no live future.
//!
//! # Protocol
//!
//! A task's future may only be dropped on its core (async-task's local tasks abort the process
//! otherwise). Where can a live task be when shutdown starts? Queued on the core, in the inbox,
//! in the wheel (a `spawn_at` task), idle with its waker held somewhere, or *in flight*: woken
//! on another thread, which has made it scheduled and is about to push it into the inbox. The
//! core keeps the set of live tasks (from a task's first poll until its future is dropped) and
//! loops:
//!
//! 1. wake every live task: an idle one is queued here; one already scheduled is queued or in
//!    the inbox, or in flight (a second wake of a scheduled task does nothing);
//! 2. take the inbox, then drop every queued task and every timer's value (which drops the
//!    tasks' futures, here);
//! 3. if a live task remains, its wake is in flight: yield, and go again.
//!
//! Only when no live future remains does the inbox close. A wake or spawn refused after that
//! is dropped by its pusher, which is then allowed: the task's future is gone already, or it is
//! a remote spawn, whose future is `Send` and was never polled. Closing first (the old order)
//! refused an in-flight wake whose task still had its future, and its pusher's drop aborted the
//! process. `loom-tests/tests/shutdown_ownership.rs` runs [`shut_down`] against a remote wake
//! and a blocking job's completion, and fails with the old order.

use tickless_timer::internal::Op;

use super::registry;
use super::run::{take_handed_over, Driver};
use super::shared::{Due, Shared, Unpark};
use super::Core;
use crate::catch::{drop_caught, wake_caught};

/// The part of a core its shutdown drives (production: [`Core`]; the loom models: a model
/// core).
pub trait Owner: Driver {
    /// Wakes every task whose future is alive and has been polled.
    fn wake_live(&self);
    /// Drops every queued task and every timer's value, here, until none is left (a
    /// destructor may spawn).
    fn drop_queued(&self);
    /// Whether a polled task's future is still alive.
    fn has_live(&self) -> bool;
}

/// Shuts a core down by ownership (see the module's protocol): drops every live task's future
/// on this thread, then closes the inbox and drops what it held.
pub fn shut_down<D: Owner>(d: &D) {
    loop {
        d.wake_live();
        take_handed_over(d);
        d.drop_queued();
        if !d.has_live() {
            break;
        }
        // A live task was woken elsewhere before us: its push is on its way to the inbox.
        crate::sync::yield_now();
    }
    for op in close(d.shared()) {
        drop_caught(op);
    }
    // What those destructors spawned on this core.
    d.drop_queued();
}

/// The last step of a core's shutdown, for every core and for the loom models: closes the
/// inbox (every later push is refused and dropped by its pusher) and returns what it still
/// held, then lets the unparker go, so that no kick writes the eventfd after this returns.
pub fn close<U: Unpark>(shared: &Shared<U>) -> Vec<Op<Due>> {
    let left = shared.inbox.close();
    registry::unregister(shared.id);
    drop(shared.close_unparker());
    left
}

impl Owner for Core {
    fn wake_live(&self) {
        // Cloned out of the set: a wake runs no user code here (async-task queues the task
        // through `schedule`), but the set must not be borrowed while futures drop.
        let wakers: Vec<_> = self.tasks.borrow().iter().map(|(_, w)| w.clone()).collect();
        for w in wakers {
            wake_caught(w);
        }
    }

    fn drop_queued(&self) {
        loop {
            let next = self.queue().pop_front();
            if let Some(runnable) = next {
                // Drops the task's future without polling it; its handle learns it was
                // cancelled.
                drop_caught(runnable);
                continue;
            }
            // The stealable queue's, through the private queue (dropped outside its lock).
            let spilled = self.shared.spill.take_all(self.peers.backlogs());
            self.spilled.set(0);
            if !spilled.is_empty() {
                self.queue().extend(spilled);
                continue;
            }
            // Timers hold wakers and `spawn_at` tasks.
            let timers = self.timers.take_all();
            if timers.is_empty() {
                return;
            }
            for value in timers {
                drop_caught(value);
            }
        }
    }

    fn has_live(&self) -> bool {
        // Keys of tasks that moved away (or were dropped on another core) first.
        self.take_orphans();
        !self.tasks.borrow().is_empty()
    }
}

impl Core {
    /// Shuts the core down on its thread (see [`shut_down`]), then publishes its counters.
    /// Every drop is caught: a panicking destructor costs its own task, and is counted.
    pub(crate) fn shutdown(&self) {
        shut_down(self);
        self.publish();
    }
}
