//! Task ids, spawn locations and the task hooks: ids unique and the same seen from the handle,
//! from inside and from the hooks; every spawn path records the caller's line; each hook
//! called exactly as often as tokio's would be; a panicking hook costs only its call.
//!
//! Counts and orderings only, never durations.

use std::collections::HashSet;
use std::panic::Location;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tickless::task::{Id, JoinSet};
use tickless::{spawn, yield_now, Builder};

/// Where each spawned task says it was spawned, by id.
type Seen = Arc<Mutex<Vec<(Id, &'static Location<'static>)>>>;

/// A one-core runtime whose spawn hook records every task's id and location.
fn recording() -> (tickless::Runtime, Seen) {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let rt = Builder::new()
        .cores(2)
        .on_task_spawn(move |meta| record.lock().unwrap().push((meta.id(), meta.spawned_at())))
        .build()
        .unwrap();
    (rt, seen)
}

/// The line the hook saw for task `id`.
fn line_of(seen: &Seen, id: Id) -> u32 {
    let seen = seen.lock().unwrap();
    let (_, at) = seen
        .iter()
        .find(|(i, _)| *i == id)
        .expect("the hook saw it");
    assert_eq!(at.file(), file!());
    at.line()
}

#[test]
fn ids_are_unique_and_the_same_from_every_side() {
    let (rt, seen) = recording();
    let ids = rt.block_on(async {
        assert!(tickless::task::try_id().is_none(), "block_on is no task");
        let mut ids = Vec::new();
        for _ in 0..100 {
            let task = spawn(async { tickless::task::id() });
            let id = task.id();
            assert_eq!(task.await.unwrap(), id);
            ids.push(id);
        }
        assert!(
            tickless::task::try_id().is_none(),
            "cleared after each task's poll"
        );
        ids
    });
    let unique: HashSet<Id> = ids.iter().copied().collect();
    assert_eq!(unique.len(), 100);
    let hooked: HashSet<Id> = seen.lock().unwrap().iter().map(|(id, _)| *id).collect();
    assert_eq!(hooked, unique);
    assert_eq!(
        format!("{}", ids[0]),
        format!("{:?}", ids[0])[3..].trim_end_matches(')')
    );
    assert!(tickless::task::try_id().is_none(), "no runtime");
}

#[test]
fn every_spawn_path_records_its_caller() {
    let (rt, seen) = recording();
    let handle = rt.handle(1);
    let (line, id) = (line!(), handle.spawn(async {}).id());
    assert_eq!(line_of(&seen, id), line);
    let (line, id) = (line!(), handle.spawn_blocking(|| ()).id());
    assert_eq!(line_of(&seen, id), line);
    let at = rt.block_on(async {
        let mut lines = Vec::new();
        let (line, task) = (line!(), spawn(async {}));
        lines.push((line, task.id()));
        let (line, task) = (line!(), tickless::spawn_local(async {}));
        lines.push((line, task.id()));
        let (line, task) = (line!(), tickless::task::spawn_blocking(|| ()));
        lines.push((line, task.id()));
        let mut set = JoinSet::new();
        let line = line!() + 1; // the next line's
        set.spawn(async { tickless::task::id() });
        let id = set.join_next().await.unwrap().unwrap();
        lines.push((line, id));
        lines
    });
    for (line, id) in at {
        assert_eq!(line_of(&seen, id), line, "task {id}");
    }
}

/// Counts of each hook's calls.
#[derive(Default)]
struct Calls {
    spawn: AtomicUsize,
    terminate: AtomicUsize,
    before: AtomicUsize,
    after: AtomicUsize,
}

#[test]
fn hooks_are_called_once_per_spawn_poll_and_end() {
    let calls = Arc::new(Calls::default());
    let (a, b, c, d) = (calls.clone(), calls.clone(), calls.clone(), calls.clone());
    let rt = Builder::new()
        .cores(1)
        .on_task_spawn(move |_| {
            a.spawn.fetch_add(1, Ordering::Relaxed);
        })
        .on_task_terminate(move |_| {
            b.terminate.fetch_add(1, Ordering::Relaxed);
        })
        .on_before_task_poll(move |meta| {
            assert_eq!(
                tickless::task::id(),
                meta.id(),
                "the task's id inside the hook"
            );
            c.before.fetch_add(1, Ordering::Relaxed);
        })
        .on_after_task_poll(move |_| {
            d.after.fetch_add(1, Ordering::Relaxed);
        })
        .build()
        .unwrap();
    rt.block_on(async {
        // Ten tasks of three polls each.
        let tasks: Vec<_> = (0..10)
            .map(|_| {
                spawn(async {
                    yield_now().await;
                    yield_now().await;
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        // One aborted before its first poll: spawned and terminated, never polled.
        let never = spawn(async {});
        never.abort();
        assert!(never.await.unwrap_err().is_cancelled());
    });
    assert_eq!(calls.spawn.load(Ordering::Relaxed), 11);
    assert_eq!(calls.terminate.load(Ordering::Relaxed), 11);
    // The aborted task's one poll sees the abort and ends without polling its future: tokio
    // calls the poll hooks around it too.
    assert_eq!(calls.before.load(Ordering::Relaxed), 31);
    assert_eq!(calls.after.load(Ordering::Relaxed), 31);
}

#[test]
fn a_panicking_hook_costs_only_its_call() {
    let rt = Builder::new()
        .cores(1)
        .on_task_spawn(|_| panic!("spawn hook"))
        .on_before_task_poll(|_| panic!("poll hook"))
        .on_task_terminate(|_| panic!("terminate hook"))
        .build()
        .unwrap();
    let before = rt.stats().cores[0];
    let out = rt.block_on(async {
        let task = spawn(async {
            yield_now().await;
            6 * 7
        });
        task.await.unwrap()
    });
    assert_eq!(out, 42);
    let spent = rt.stats().cores[0] - before;
    // Spawned on core 0 (its spawn hook panicked there), two polls, one end.
    assert_eq!(spent.wake_panics, 4);
    assert_eq!(spent.task_panics, 0);
}
