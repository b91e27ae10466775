//! A thief taking a stuck core's run queue (`tickless`'s `Shared::take_from_stuck`, what an
//! idle core's `Core::look_for_stuck` calls, over `worker::runq`'s claim and barrier) racing
//! the owner's own pops and pushes (`RunQueue::owner`, what `Core::next_task` and
//! `Core::schedule_local` go through), on the production queue, task metadata and schedule
//! function.
//!
//! Core A's run queue holds two `Send` tasks and a `spawn_local` one; core B, idle, has judged
//! A stuck. A comes back meanwhile: it pops and runs a task, queues a third `Send` task, and
//! pops and runs until its queue is empty; B takes what it can and runs it. Whatever the
//! interleaving: the owner and the thief are never inside the queue at once (loom's cell
//! tracking fails the model otherwise), every `Send` task runs exactly once (never twice,
//! never lost), the local one only on A, and each task's count on the cores' loads is where
//! it ran. Without the owner's barrier (`light_barrier` in `RunQueue::owner`, a `SeqCst`
//! fence under loom: the compiler fence that `membarrier` completes) the model fails: both
//! sides may read the other's flag clear and reach the queue at once.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use loom::sync::Mutex;
use loom::thread;
use tickless::loom_exports::{schedule, Peers, Runnable, Shared, TaskMeta};
use tickless_io::internal::Reactor;

loom::thread_local! {
    /// Which core the model thread plays: 0 for A, 1 for B.
    static WHO: std::cell::Cell<usize> = std::cell::Cell::new(0);
}

/// The model task: its poll records (task, core) and completes.
struct Recorded {
    /// Which task.
    id: usize,
    /// Every poll of every task, in order.
    runs: Arc<Mutex<Vec<(usize, usize)>>>,
}

impl Future for Recorded {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        self.runs
            .lock()
            .unwrap()
            .push((self.id, WHO.with(|w| w.get())));
        Poll::Ready(())
    }
}

/// A task of `home` (movable, or a `spawn_local` one's), counted on its load.
fn task(
    home: &Shared,
    peers: &Arc<Peers>,
    id: usize,
    movable: bool,
    runs: &Arc<Mutex<Vec<(usize, usize)>>>,
) -> Runnable {
    let meta = if movable {
        TaskMeta::for_model(home, peers.clone())
    } else {
        TaskMeta::for_model_local(home, peers.clone())
    };
    let future = Recorded {
        id,
        runs: runs.clone(),
    };
    let (runnable, handle) = async_task::Builder::new()
        .metadata(meta)
        .spawn(move |_| future, schedule);
    handle.detach();
    home.count_task_for_model();
    runnable
}

#[test]
fn the_owner_and_a_thief_never_run_a_task_twice_nor_lose_one() {
    loom::model(|| {
        let (ra, rb) = (Reactor::new().unwrap(), Reactor::new().unwrap());
        let a = Arc::new(Shared::for_model(ra.unparker()));
        let b = Arc::new(Shared::for_model(rb.unparker()));
        let peers = Peers::for_model(vec![a.clone(), b.clone()]);
        let runs = Arc::new(Mutex::new(Vec::new()));
        // The owner's mirror of its queue's length (each thread its own: it is the owner's).
        let len = std::cell::Cell::new(0);
        {
            let mut queue = a.runq().owner(&len);
            queue.push_back(task(&a, &peers, 1, true, &runs));
            queue.push_back(task(&a, &peers, 2, false, &runs));
            queue.push_back(task(&a, &peers, 3, true, &runs));
        }
        let late = task(&a, &peers, 4, true, &runs);

        let owner = {
            let a = a.clone();
            thread::spawn(move || {
                WHO.with(|w| w.set(0));
                let len = std::cell::Cell::new(0);
                let first = a.runq().owner(&len).pop_front();
                if let Some(r) = first {
                    r.run();
                }
                a.runq().owner(&len).push_back(late);
                loop {
                    let next = a.runq().owner(&len).pop_front();
                    match next {
                        Some(r) => {
                            r.run();
                        }
                        None => break,
                    }
                }
            })
        };
        let thief = {
            let (a, b, peers) = (a.clone(), b.clone(), peers.clone());
            thread::spawn(move || {
                WHO.with(|w| w.set(1));
                let mut stolen = Vec::new();
                let n = a.take_from_stuck(&b, &peers, &mut stolen);
                assert_eq!(n, stolen.len());
                for r in stolen {
                    assert!(r.metadata().home_shared().core_id() == b.core_id());
                    r.run();
                }
            })
        };
        owner.join().unwrap();
        thief.join().unwrap();

        assert!(
            a.runq().owner(&len).is_empty(),
            "the owner ran its queue dry"
        );
        let mut ran = runs.lock().unwrap().clone();
        ran.sort_unstable();
        let ids: Vec<usize> = ran.iter().map(|&(id, _)| id).collect();
        assert_eq!(ids, [1, 2, 3, 4], "each task ran once: {ran:?}");
        assert!(ran.contains(&(2, 0)), "the local task stayed on A: {ran:?}");
        let on_b = ran.iter().filter(|&&(_, core)| core == 1).count();
        // The tasks are counted where they ran (none finished through a harness here).
        assert_eq!(
            (a.load_for_model(), b.load_for_model()),
            (4 - on_b, on_b),
            "{ran:?}"
        );
        drop((ra, rb));
    });
}
