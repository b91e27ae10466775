//! Work that moves: an idle core takes runnable `Send` tasks that another core has left unrun
//! for longer than `Builder::steal_after` (`try_steal`): every one of a core stuck in a long
//! poll or off its CPU (`look_for_stuck`), half the spilled backlog of an overloaded one
//! (`steal_now`); and core 0, when its `block_on` returns, hands its `Send` tasks to a core
//! that runs (`evacuate`).
//!
//! A task moves only between polls, as a `Runnable`: taken out of a queue under the queue's
//! claim or lock (a run queue, `worker::runq`; a spill queue, `worker::spill`) or on the core
//! that owns it (`evacuate`), re-homed
//! (`TaskMeta::set_home`, see its protocol) with its count on the cores' loads
//! (`worker::load`'s books), and queued on its new core. Its next poll there moves its
//! live-task entry (`task::harness`), and its streams and timers follow it when it
//! polls them (the I/O and timer rules of `registration/` and `time/`). `spawn_local` tasks
//! never move: they are not movable, never spill, a thief leaves them in the run queue, and
//! `evacuate` leaves them.

use std::sync::Arc;

use tickless_timer::Slack;

use crate::sync::Ordering;

use super::load::move_tasks;
use super::runq::take_unless;
use super::shared::{Due, Peers, Runnable, Shared, Unpark, SERVES, SHARE_OUT, STEPPED_BACK};
use super::Core;

impl Core {
    /// [`schedule_local`](Self::schedule_local) behind other tasks, with stealing on: a
    /// `Send` task beyond the run queue's room spills; one queued behind another is announced
    /// to thieves (see [`announce_queued`](Self::announce_queued)).
    #[cold]
    #[inline(never)]
    pub(super) fn schedule_crowded(&self, runnable: Runnable) {
        let movable = runnable.metadata().movable();
        let mut queue = self.queue();
        if (queue.len() < self.spill_room && self.spilled.get() == 0) || !movable {
            let behind = movable && !queue.is_empty();
            queue.push_back(runnable);
            drop(queue);
            if behind {
                self.announce_queued();
            }
            return;
        }
        drop(queue);
        self.spill(runnable);
    }

    /// A `Send` task waits behind another: says so to thieves (the run queue's
    /// `queued_behind`, until this core goes idle or a thief empties its run queue), and, as
    /// it starts to say so, tells a peer that has no look due (`Shared::look_due`), a parked
    /// one first, to come and look. The peer's look notes this core's poll word and looks
    /// again `steal_after` later (and so on while this core says so and is not parked),
    /// taking the tasks if the word has not moved meanwhile: a core that keeps up has moved
    /// on, and nothing is taken. (An awake peer is told too: it may be on its way to a park,
    /// past its last look.) So a peer is woken once per `steal_after` at most for this core,
    /// and not at all while this core never queues a task behind another.
    fn announce_queued(&self) {
        if self.steal_after.is_none() || self.timers.clock().is_paused() {
            return;
        }
        if !self.shared.runq.set_queued_behind(true) {
            return;
        }
        let me = self.id().index;
        let free = |c: &&Arc<Shared>| !c.look_due() && c.takes_placed_work();
        let peer = (self.peers.others(me).find(|c| c.is_parked() && free(c)))
            .or_else(|| self.peers.others(me).find(free));
        if let Some(peer) = peer {
            peer.set_look_due(true);
            peer.push_now(Due::StealCheck);
        }
    }

    /// An idle core looks at the other cores: takes every runnable `Send` task of one stuck
    /// with tasks queued behind its poll (see [`look_for_stuck`](Self::look_for_stuck)), or
    /// else half of the first backlog (spilled tasks) that has waited `steal_after` or more;
    /// for a younger one, arms a timer for when it will have, so that an idle core that
    /// sleeps looks again then. Returns whether it took tasks (the loop turns again at once).
    /// Not with paused time (which would make where tasks run depend on the test's jumps),
    /// nor with one core.
    #[inline]
    pub(crate) fn try_steal(&self) -> bool {
        let Some(age) = self.steal_after else {
            return false;
        };
        // This core goes idle: nothing waits in its run queue any more; and it looks now (a
        // look due later arms its timer, and says so, again).
        let _ = self.shared.runq.set_queued_behind(false);
        if self.shared.look_due() {
            self.shared.set_look_due(false);
        }
        // A core that stepped back (crowded CPUs) takes no work from the others.
        if self.stepped_back.get() {
            return false;
        }
        if self.look_for_stuck(age) {
            return true;
        }
        // One load while no core has a backlog (an idle runtime, a core that keeps up).
        if self.peers.backlogs().load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.steal_now(age)
    }

    /// Looks at each other core that has queued `Send` tasks behind its poll since it last
    /// went idle (`RunQueue::has_queued_behind`) and is not parked: the first look at a poll
    /// word notes it (and arms a timer for `steal_after` later); a look that finds the same
    /// word `steal_after` or more after it was noted finds the core stuck (in one poll, or
    /// its thread off its CPU, all that time) and takes every runnable `Send` task it has
    /// ([`Shared::take_from_stuck`]). A clock read only when some core has tasks queued
    /// behind its poll. Returns whether it took tasks.
    fn look_for_stuck(&self, age: u64) -> bool {
        let me = self.id().index;
        let mut read = None;
        let mut seen = self.seen.borrow_mut();
        for peer in self.peers.others(me) {
            if !peer.runq.has_queued_behind() || peer.is_parked() {
                continue;
            }
            let word = peer.poll_word();
            let now = *read.get_or_insert_with(|| self.timers.clock().now());
            let index = peer.id.index;
            if seen.len() <= index {
                seen.resize(index + 1, (u64::MAX, 0));
            }
            let (was, since) = seen[index];
            if was != word {
                seen[index] = (word, now);
                self.arm_steal_check(now.saturating_add(age));
                continue;
            }
            if now.saturating_sub(since) < age {
                self.arm_steal_check(since.saturating_add(age));
                continue;
            }
            let mut stolen = self.stolen_buf.borrow_mut();
            let n = peer.take_from_stuck(&self.shared, &self.peers, &mut stolen);
            if n > 0 {
                self.counters
                    .steals
                    .set(self.counters.steals.get() + n as u64);
                self.queue().extend(stolen.drain(..));
                if n > 1 {
                    // They wait behind one another here now: say so, as a push would.
                    let _ = self.shared.runq.set_queued_behind(true);
                }
                return true;
            }
            // Nothing to take (the core was back in its queue, or has only tasks that stay):
            // watch it afresh, if it still says it has tasks queued.
            seen[index] = (word, now);
            if peer.runq.has_queued_behind() {
                self.arm_steal_check(now.saturating_add(age));
            }
        }
        false
    }

    /// [`try_steal`](Self::try_steal)'s look at the backlogs, out of line.
    #[inline(never)]
    fn steal_now(&self, age: u64) -> bool {
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
        let mut queue = self.queue();
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
        self.shared.set_look_due(true);
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
        self.hand_on()
    }

    /// The core stepped back from serving, or serves again, as the watchdog decided
    /// (`runtime::crowding`, `Builder::yield_when_crowded`): stepping back, it hands its `Send`
    /// tasks on to the cores that serve (as [`evacuate`](Self::evacuate) does; its
    /// `spawn_local` tasks and its accept loop stay, and what it accepts is placed on the
    /// others). Called where the core parks and at its fairness polls: one load.
    pub(crate) fn follow_yield(&self) {
        let word = self.shared.yielded.load(Ordering::Relaxed);
        if word == usize::from(self.stepped_back.get()) {
            return;
        }
        let yielded = word == STEPPED_BACK;
        if yielded != self.stepped_back.get() {
            self.stepped_back.set(yielded);
            if yielded && !self.timers.clock().is_paused() {
                self.shared.watch.count_yield();
                self.hand_on();
            }
        }
        if self.shared.take_share_out() && !self.timers.clock().is_paused() {
            self.share_out();
        }
    }

    /// A core serves again after stepping back (`Shared::serve_again`): hands the cores that
    /// take work enough of this core's `Send` tasks to even the loads out (stepping back moved
    /// all of them here, and a task moves only when its core cannot run it). Every live task
    /// is woken for it (one spurious poll each, once per return). Returns how many moved.
    fn share_out(&self) -> usize {
        let runnable = self.every_live_task();
        let me = self.id().index;
        let targets: Vec<_> = (self.peers.others(me))
            .filter(|c| c.takes_placed_work())
            .collect();
        let mut moved = 0;
        for task in runnable {
            // To the least loaded, while it carries fewer tasks than this core would keep.
            let least = targets.iter().min_by_key(|c| c.load());
            match least {
                Some(target)
                    if task.metadata().movable() && target.load() + 1 < self.shared.load() =>
                {
                    self.move_to(task, target);
                    moved += 1;
                }
                _ => self.queue().push_back(task),
            }
        }
        let placed = &self.counters.placed;
        placed.set(placed.get() + moved as u64);
        moved
    }

    /// Every live task of the core, runnable: woken here first (a second wake of a queued
    /// task does nothing), then taken from its queues.
    fn every_live_task(&self) -> Vec<Runnable> {
        super::shutdown::Owner::wake_live(self);
        let mut runnable: Vec<Runnable> = self.queue().drain(..).collect();
        runnable.extend(self.shared.spill.take_all(self.peers.backlogs()));
        self.spilled.set(0);
        runnable
    }

    /// Moves `task` to `target`: its count goes with it, before it can run (and finish) there.
    fn move_to(&self, task: Runnable, target: &Arc<Shared>) {
        super::load::move_tasks(&self.shared.load, true, &target.load, false, 1);
        task.metadata().set_home(target.id.key());
        target.schedule_remote(task);
    }

    /// Hands every `Send` task of the core on to the cores that take work, in turn: the
    /// runnable ones now, the waiting ones woken here first (a wake of a task whose core does
    /// not take work moves it, with its streams and timers at its next poll). Returns how many
    /// moved.
    fn hand_on(&self) -> usize {
        let runnable = self.every_live_task();
        // The cores that run, in turn.
        let me = self.id().index;
        let mut targets: Vec<_> = (self.peers.others(me))
            .filter(|c| c.takes_placed_work())
            .collect();
        if targets.is_empty() {
            // None takes work (core 0 left, the others stepped back): one that runs.
            targets.extend(self.peers.driven_other(me));
        }
        let mut moved = 0;
        for task in runnable {
            if !task.metadata().movable() || targets.is_empty() {
                self.queue().push_back(task);
                continue;
            }
            self.move_to(task, targets[moved % targets.len()]);
            moved += 1;
        }
        let placed = &self.counters.placed;
        placed.set(placed.get() + moved as u64);
        moved
    }
}

impl<U: Unpark> Shared<U> {
    /// The core steps back from serving (the watchdog's decision, `runtime::crowding`), woken
    /// to hand its `Send` tasks on (`Core::follow_yield`); [`serve_again`](Self::serve_again)
    /// undoes it.
    pub(crate) fn step_back(&self) {
        self.set_yielded(true);
        self.notify_now();
    }

    /// The core serves again after stepping back: every other core of `cores` that takes work
    /// hands it a share of its `Send` tasks (stepping back moved them all away), woken to do so.
    pub fn serve_again(&self, cores: &[Arc<Self>]) {
        self.set_yielded(false);
        self.notify_now();
        let others = cores
            .iter()
            .filter(|c| c.id != self.id && c.takes_placed_work());
        for other in others {
            // Only a core that serves: one that stepped back meanwhile keeps its word.
            let asked = (other.yielded)
                .compare_exchange(SERVES, SHARE_OUT, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok();
            if asked {
                other.notify_now();
            }
        }
    }

    /// Core side (`Core::follow_yield`, at its idle transitions and fairness polls): whether a
    /// core that serves again asked this one to share its tasks out ([`serve_again`]), taking
    /// the request. Asked once: a step back in between overrides it (the word is then
    /// `STEPPED_BACK`, which this leaves).
    ///
    /// The request's word is written before the asking core's notify, whose read-modify-write
    /// on the inbox's word orders it before this core's clearing of `DIRTY` (or makes its
    /// attempt to sleep fail): a core that looked before the request turns again, and its next
    /// look sees it (`loom-tests/tests/share_out.rs`).
    ///
    /// [`serve_again`]: Self::serve_again
    pub fn take_share_out(&self) -> bool {
        (self.yielded)
            .compare_exchange(SHARE_OUT, SERVES, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

impl Shared {
    /// Thief side (`thief`, an idle core, on its thread), once this core has been seen stuck
    /// (its poll word unchanged for `steal_after` with tasks queued behind): takes every
    /// runnable `Send` task it has, from its run queue (`worker::runq`, unless its thread is
    /// inside it: then nothing) and its stealable queue, in order, into `into`; re-homed and
    /// their count moved as [`steal_into`](Self::steal_into)'s. `spawn_local` tasks stay.
    /// Returns how many. Nothing from a core whose clock is paused, or that stops.
    pub fn take_from_stuck(
        &self,
        thief: &Shared,
        peers: &Peers,
        into: &mut Vec<Runnable>,
    ) -> usize {
        if self.keeps_work_while_paused() || self.stop_requested() {
            return 0;
        }
        let before = into.len();
        let taken = self
            .runq
            .steal(|tasks| take_unless(tasks, into, |r| !r.metadata().movable()));
        if taken.is_none() {
            // The owner is back in its queue: not stuck after all.
            return 0;
        }
        into.extend(self.spill.take_all(peers.backlogs()));
        for runnable in &into[before..] {
            runnable.metadata().set_home(thief.id.key());
        }
        let n = into.len() - before;
        move_tasks(&self.load, false, &thief.load, true, n);
        n
    }
}
