//! A wake racing the end of core 0's `block_on` (`tickless`'s `Shared::schedule_if_driven`
//! against `Shared::leave_and_take`, what `Core::evacuate` calls first), on the production
//! inbox, task metadata and schedule function.
//!
//! A task of core 0 is idle, its waker out; core 0's `block_on` returns while a thread of no
//! core wakes the task. Whatever the interleaving, the task is taken by the evacuation (which
//! then moves it), or moved to core 1 by the wake itself, exactly once; it is never left in
//! core 0's inbox, where nobody would look until the next `block_on`. Checking whether core 0
//! is driven outside the inbox's lock (before the push), or taking the inbox only if its
//! `DIRTY` bit is set (a push sets it after it unlocks), strands it, and the model fails.
#![cfg(loom)]

mod common;

use common::model_tasks::{tasks_in, tasks_left, Idle};

use std::sync::Arc;

use loom::sync::Mutex;
use loom::thread;
use tickless::loom_exports::{schedule, Peers, Shared, TaskMeta};
use tickless_io::internal::Reactor;

#[test]
fn a_wake_racing_block_on_s_end_is_taken_by_the_evacuation_or_moves_itself() {
    loom::model(|| {
        let (r0, r1) = (Reactor::new().unwrap(), Reactor::new().unwrap());
        let mut cores = Shared::for_model_runtime(vec![r0.unparker(), r1.unparker()]);
        let one = Arc::new(cores.pop().unwrap());
        let zero = Arc::new(cores.pop().unwrap());
        let peers = Peers::for_model(vec![zero.clone(), one.clone()]);
        let waker = Arc::new(Mutex::new(None));
        let future = Idle {
            waker: waker.clone(),
        };
        let (runnable, task) = async_task::Builder::new()
            .metadata(TaskMeta::for_model(&zero, peers.clone()))
            .spawn(move |_| future, schedule);
        task.detach();
        // Its first poll, on core 0, before the model starts: idle, its waker out.
        runnable.run();

        let waking = {
            let waker = waker.lock().unwrap().clone().unwrap();
            thread::spawn(move || waker.wake())
        };
        // Core 0's `block_on` returns: what `Core::evacuate` does first.
        let mut evacuated = Vec::new();
        zero.leave_and_take(&mut evacuated);
        waking.join().unwrap();

        let taken = tasks_in(&evacuated);
        let (stranded, moved) = (tasks_left(&zero), tasks_left(&one));
        assert_eq!(stranded, 0, "the wake was left in core 0's inbox");
        assert_eq!(
            taken + moved,
            1,
            "taken by the evacuation ({taken}) or moved by the wake ({moved}), once"
        );
        drop(evacuated);
        drop((r0, r1));
    });
}
