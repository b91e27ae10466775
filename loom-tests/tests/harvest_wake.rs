//! The wakes a harvest makes (`tickless`'s `Harvesting`, `task::spawn::schedule_away`), on the
//! production schedule function, task metadata and inboxes: a harvester, on a thread that is
//! taking core 1's ready I/O, wakes a `spawn_local` task of core 1 and a `Send` one, while core
//! 1's own thread drains its inbox.
//!
//! Whatever the interleaving, the `spawn_local` task is handed to core 1 (drained by it, or
//! still in its inbox), exactly once, and never to core 0; the `Send` task moves to a core that
//! runs (core 0 here, the harvester being on no core of its own), exactly once. Moving the local
//! task too (the movable check after the harvest's), or leaving the `Send` one on core 1 (no
//! harvest check), fails.
#![cfg(loom)]

mod common;

use common::model_tasks::{tasks_in, tasks_left, Idle};

use std::sync::Arc;
use std::task::Waker;

use loom::sync::Mutex;
use loom::thread;
use tickless::loom_exports::{schedule, Harvesting, Peers, Shared, TaskMeta};
use tickless_io::internal::Reactor;

/// A task of `home` (local or not), run once so that its waker is out; returns the waker.
fn idle_task(meta: TaskMeta) -> Waker {
    let waker = Arc::new(Mutex::new(None));
    let future = Idle {
        waker: waker.clone(),
    };
    let (runnable, task) = async_task::Builder::new()
        .metadata(meta)
        .spawn(move |_| future, schedule);
    task.detach();
    runnable.run();
    let out = waker.lock().unwrap().clone().unwrap();
    out
}

#[test]
fn a_harvest_s_wake_moves_a_send_task_and_leaves_a_local_one_on_its_core() {
    loom::model(|| {
        let (r0, r1) = (Reactor::new().unwrap(), Reactor::new().unwrap());
        let mut cores = Shared::for_model_runtime(vec![r0.unparker(), r1.unparker()]);
        let one = Arc::new(cores.pop().unwrap());
        let zero = Arc::new(cores.pop().unwrap());
        let peers = Peers::for_model(vec![zero.clone(), one.clone()]);
        let local = idle_task(TaskMeta::for_model_local(&one, peers.clone()));
        let sendable = idle_task(TaskMeta::for_model(&one, peers.clone()));
        let harvester = thread::spawn(move || {
            let _harvesting = Harvesting::from(1);
            local.wake();
            sendable.wake();
        });
        // Core 1's thread meanwhile takes what was handed to it.
        let mut drained = Vec::new();
        one.inbox().drain_locked(&mut drained);
        harvester.join().unwrap();
        let on_one = tasks_in(&drained) + tasks_left(&one);
        let on_zero = tasks_left(&zero);
        assert_eq!(on_one, 1, "the local task stays with core 1, once");
        assert_eq!(on_zero, 1, "the Send task moves to core 0, once");
        drop(drained);
        drop((r0, r1));
    });
}
