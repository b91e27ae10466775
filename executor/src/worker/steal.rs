//! Work that moves: an idle core takes runnable `Send` tasks that another core has left unrun
//! for longer than `Builder::steal_after` (`try_steal`), and core 0, when its `block_on`
//! returns, hands its `Send` tasks to a core that runs (`evacuate`).
//!
//! A task moves only between polls, as a `Runnable`: taken out of a queue under the queue's
//! lock (a spill queue, `worker::spill`) or on the core that owns it (`evacuate`), re-homed
//! (`TaskMeta::set_home`, see its protocol) with its count on the cores' loads
//! (`worker::load`'s books), and queued on its new core. Its next poll there moves its
//! live-task entry (`task::harness`), and its streams and timers follow it when it
//! polls them (the I/O and timer rules of `registration/` and `time/`). `spawn_local` tasks
//! never move: they are not movable, never spill, and `evacuate` leaves them.

use std::sync::Arc;

use tickless_timer::Slack;

use crate::sync::Ordering;

use super::shared::{Due, Runnable};
use super::Core;

impl Core {
    /// An idle core looks at the other cores' backlogs: takes half of the first one that has
    /// waited `steal_after` or more; for a younger one, arms a timer for when it will have,
    /// so that an idle core that sleeps looks again then. Returns whether it took tasks (the
    /// loop turns again at once). Not with paused time (which would make where tasks run
    /// depend on the test's jumps), nor with one core.
    #[inline]
    pub(crate) fn try_steal(&self) -> bool {
        // One load while no core has a backlog (an idle runtime, a core that keeps up).
        if self.peers.backlogs().load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.steal_now()
    }

    /// [`try_steal`](Self::try_steal)'s work, out of line.
    #[inline(never)]
    fn steal_now(&self) -> bool {
        let Some(age) = self.steal_after else {
            return false;
        };
        let now = self.timers.clock().now();
        let mut stolen = self.stolen_buf.borrow_mut();
        let mut check: Option<u64> = None;
        for peer in self.peers.others(self.id().index) {
            match peer.steal_into(&self.shared, &self.peers, now, age, &mut stolen) {
                Ok(0) => {}
                Ok(_) => break,
                Err(since) => {
                    let at = since.saturating_add(age);
                    check = Some(check.map_or(at, |c| c.min(at)));
                }
            }
        }
        if stolen.is_empty() {
            if let Some(at) = check {
                self.arm_steal_check(at);
            }
            return false;
        }
        self.counters
            .steals
            .set(self.counters.steals.get() + stolen.len() as u64);
        let mut queue = self.queue.borrow_mut();
        // Re-homed here already (`steal_into`).
        queue.extend(stolen.drain(..));
        true
    }

    /// Arms a timer on this core's wheel for `at`, when a backlog seen young will be old
    /// enough to take, unless one is pending already for no later (its firing clears it, and
    /// the core looks again as it goes idle).
    fn arm_steal_check(&self, at: u64) {
        if self.steal_check.get().is_some_and(|armed| armed <= at) {
            return;
        }
        self.steal_check.set(Some(at));
        self.timers.insert(at, Slack::None, Due::StealCheck);
    }

    /// Core 0, as its `block_on` returns: no thread will run it until the next `block_on` (it
    /// says so first, and takes what was handed to it until then). If another core runs, its `Send` tasks go there: the runnable ones now, and the idle ones
    /// are woken so that they go too (a wake of a task whose core runs nothing re-homes it, see
    /// `task::spawn::schedule`), with their streams and timers following at their next poll.
    /// `spawn_local` tasks stay, to run at the next `block_on`. Not with paused time, whose
    /// jumps are each core's own (tasks stay for the next `block_on`, as on tokio's
    /// current-thread runtime, the only one tokio pauses). Returns how many moved.
    pub(crate) fn evacuate(&self) -> usize {
        // Not driven first, then the inbox taken whole: a wake from another thread from now
        // on moves its task itself, and every one before is taken here (see
        // `Shared::schedule_if_driven`); the core that serves core 0's listeners meanwhile
        // starts.
        {
            let mut ops = self.ops_buf.borrow_mut();
            self.shared.leave_and_take(&mut ops);
            for op in ops.drain(..) {
                super::run::Driver::apply(self, op);
            }
        }
        if self.timers.clock().is_paused() || self.peers.driven_other(self.id().index).is_none() {
            return 0;
        }
        // Every live task, queued here (a second wake of a queued task does nothing).
        super::shutdown::Owner::wake_live(self);
        let mut runnable: Vec<Runnable> = self.queue.borrow_mut().drain(..).collect();
        runnable.extend(self.shared.spill.take_all(self.peers.backlogs()));
        self.spilled.set(0);
        // The cores that run, in turn.
        let me = self.id().index;
        let targets: Vec<_> = (self.peers.others(me))
            .filter(|c| c.takes_placed_work())
            .collect();
        let mut moved = 0;
        for task in runnable {
            if !task.metadata().movable() || targets.is_empty() {
                self.queue.borrow_mut().push_back(task);
                continue;
            }
            let target = Arc::clone(targets[moved % targets.len()]);
            // Its count goes with it, before it can run (and finish) there.
            super::load::move_tasks(&self.shared.load, true, &target.load, false, 1);
            task.metadata().set_home(target.id.key());
            target.schedule_remote(task);
            moved += 1;
        }
        let placed = &self.counters.placed;
        placed.set(placed.get() + moved as u64);
        moved
    }
}
