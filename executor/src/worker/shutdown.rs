//! Shutting a core down on its own thread: every task's future dropped in the core's context
//! (its live-task set, its timers), the inbox closed, the timers dropped, the eventfd let go.

use tickless_timer::Op;

use super::registry;
use super::run::take_handed_over;
use super::shared::{Shared, Unpark};
use super::timers::TimerValue;
use super::Core;
use crate::catch::{drop_caught, wake_caught};

/// The last step of a core's shutdown, for every core and for the loom models: closes the
/// inbox (every later push is refused and dropped by its pusher) and returns what it still
/// held, then lets the unparker go, so that no kick writes the eventfd after this returns.
pub fn close<U: Unpark>(shared: &Shared<U>) -> Vec<Op<TimerValue>> {
    let left = shared.handover.close();
    registry::unregister(shared.id);
    drop(shared.close_unparker());
    left
}

impl Core {
    /// Drops every task's future, on this thread: wake them all so each is queued, then drop
    /// the queued runnables (which drops a task's future without polling it). Then closes the
    /// inbox and drops what it held, and the timers. Every drop is caught: a panicking
    /// destructor costs its own task, and is counted.
    pub(crate) fn shutdown(&self) {
        loop {
            let wakers: Vec<_> = self.tasks.borrow_mut().drain().collect();
            for w in wakers {
                wake_caught(w);
            }
            take_handed_over(self);
            let next = self.queue.borrow_mut().pop_front();
            match next {
                Some(runnable) => drop_caught(runnable),
                None if self.tasks.borrow().is_empty() => break,
                None => {}
            }
        }
        // From here on, hand-overs are refused and dropped by their pushers; the tasks they
        // carry are already closed, or are remote spawns whose futures are `Send`.
        for op in close(&self.shared) {
            drop_caught(op);
        }
        // Timers hold wakers and `spawn_at` tasks; drop them here, in the core's context.
        for value in self.timers.take_all() {
            drop_caught(value);
        }
        self.publish();
    }
}
