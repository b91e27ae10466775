//! A steal (`tickless`'s `Shared::steal_into`, what an idle core's `Core::try_steal` calls)
//! racing the owner's refill of its private queue (`Spill::refill`) and a wake of the task from
//! a third thread, on the production queue, task metadata and schedule function.
//!
//! Core A has spilled a runnable task; core B is idle and the backlog is old enough. A takes
//! its spill back to run it while B steals it; meanwhile another thread holds the task's waker
//! (stored by its first poll) and wakes it. Whatever the interleaving: the task runs exactly
//! once from the queue (by A or by B, never both, never neither), and the wake lands in the
//! inbox of the core that ran it (its home by then), never in the other's: a stolen task
//! belongs to its thief before it runs there, and its count on the cores' loads is the
//! thief's. Skipping the re-home in `steal_into` makes the wake go to A after B ran the task,
//! and the model fails.
#![cfg(loom)]

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use loom::sync::Mutex;
use loom::thread;
use tickless::loom_exports::{schedule, Due, Peers, Runnable, Shared, TaskMeta};
use tickless_io::internal::Reactor;
use tickless_timer::internal::Op;

loom::thread_local! {
    /// Which core the model thread plays: 0 for A, 1 for B, 2 for neither.
    static WHO: std::cell::Cell<usize> = std::cell::Cell::new(2);
}

/// The model task: each poll records the core that ran it and leaves its waker where the
/// waking thread finds it; it never completes (every wake must be routed).
struct Recorded {
    runs: Arc<Mutex<Vec<usize>>>,
    waker: Arc<Mutex<Option<Waker>>>,
}

impl Future for Recorded {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.runs.lock().unwrap().push(WHO.with(|w| w.get()));
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// The tasks handed to `shared` through its inbox.
fn scheduled_on(shared: &Shared) -> Vec<Runnable> {
    let mut ops = Vec::new();
    shared.inbox().drain(&mut ops);
    ops.into_iter()
        .filter_map(|op| match op {
            Op::Now(Due::Schedule(r)) => Some(r),
            _ => None,
        })
        .collect()
}

#[test]
fn a_stolen_task_runs_once_and_its_wakes_go_to_its_thief() {
    loom::model(|| {
        let (ra, rb) = (Reactor::new().unwrap(), Reactor::new().unwrap());
        let a = Arc::new(Shared::for_model(ra.unparker()));
        let b = Arc::new(Shared::for_model(rb.unparker()));
        let peers = Peers::for_model(vec![a.clone(), b.clone()]);
        let runs = Arc::new(Mutex::new(Vec::new()));
        let waker = Arc::new(Mutex::new(None));
        let future = Recorded {
            runs: runs.clone(),
            waker: waker.clone(),
        };
        let (runnable, task) = async_task::Builder::new()
            .metadata(TaskMeta::for_model(&a, peers.clone()))
            .spawn(move |_| future, schedule);
        task.detach();
        // Counted on A, where it was spawned.
        a.count_task_for_model();
        // Its first poll, on A, before the model starts: the waker is out.
        WHO.with(|w| w.set(0));
        runnable.run();
        WHO.with(|w| w.set(2));
        runs.lock().unwrap().clear();
        // Woken on A and spilled there: a backlog that started at 0.
        waker.lock().unwrap().clone().unwrap().wake_by_ref();
        let queued = scheduled_on(&a);
        assert_eq!(queued.len(), 1, "the wake went to A, its home");
        for r in queued {
            a.spill().push(r, || 0, peers.backlogs());
        }

        let owner = {
            let (a, peers) = (a.clone(), peers.clone());
            thread::spawn(move || {
                WHO.with(|w| w.set(0));
                let mut mine = VecDeque::new();
                a.spill().refill(&mut mine, 16, peers.backlogs());
                for r in mine {
                    r.run();
                }
            })
        };
        let thief = {
            let (a, b, peers) = (a.clone(), b.clone(), peers.clone());
            thread::spawn(move || {
                WHO.with(|w| w.set(1));
                let mut stolen = Vec::new();
                // Old enough: 10 ns past a start at 0, for an age of 10.
                let _ = a.steal_into(&b, &peers, 10, 10, &mut stolen);
                for r in stolen {
                    r.run();
                }
            })
        };
        let waking = {
            let waker = waker.clone();
            thread::spawn(move || {
                let w = waker.lock().unwrap().clone();
                if let Some(w) = w {
                    w.wake();
                }
            })
        };
        owner.join().unwrap();
        thief.join().unwrap();
        waking.join().unwrap();

        let ran = runs.lock().unwrap().clone();
        assert_eq!(
            peers.backlogs().load(std::sync::atomic::Ordering::Relaxed),
            0,
            "the backlog was taken whole, and counted off once"
        );
        assert_eq!(
            ran.len(),
            1,
            "run once from the queue, by A or by B: {ran:?}"
        );
        let (on_a, on_b) = (scheduled_on(&a), scheduled_on(&b));
        // A wake while the task was queued changed nothing (it was scheduled already); one
        // during or after its run schedules it once more.
        assert!(on_a.len() + on_b.len() <= 1, "routed once at most");
        if !on_a.is_empty() {
            assert_eq!(ran[0], 0, "a wake routed to A, but B ran the task");
        }
        if !on_b.is_empty() {
            assert_eq!(ran[0], 1, "a wake routed to B, but A ran the task");
        }
        // Its count moved with it, once: it is on the core that ran it.
        let loads = (a.load_for_model(), b.load_for_model());
        assert_eq!(loads, if ran[0] == 0 { (1, 0) } else { (0, 1) }, "{ran:?}");
        drop((on_a, on_b));
        drop((ra, rb));
    });
}
