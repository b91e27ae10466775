//! The join slot (`tickless`'s `JoinHandle` protocol): a task completing on its core while its
//! handle is awaited, or dropped (`detach`), on another thread. The result is delivered exactly
//! once and the waiter is never left asleep; a result nobody will take is handed back to
//! exactly one side, which drops it (under its panic guard, in production), never left in the
//! slot.
#![cfg(loom)]

use std::future::poll_fn;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use tickless::loom_exports::JoinSlot;

/// A task's result that counts its drops.
struct Output(Arc<AtomicUsize>);

impl Drop for Output {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn completion_racing_an_await_wakes_the_waiter() {
    loom::model(|| {
        let slot = Arc::new(JoinSlot::<u32>::new());
        let task = {
            let slot = slot.clone();
            thread::spawn(move || assert!(slot.complete(42).is_none(), "the waiter takes it"))
        };
        // `block_on` parks until woken: a lost wakeup deadlocks, which loom reports.
        let got = loom::future::block_on(poll_fn(|cx| slot.poll_take(cx)));
        assert_eq!(got, 42);
        task.join().unwrap();
        assert!(slot.is_finished());
    });
}

/// The handle is dropped (`JoinHandle::drop` detaches the slot) while the task completes: the
/// side that comes second gets the result back and drops it, so it is dropped once, by one side,
/// and nothing is left in the slot for the slot's own (unguarded) drop.
#[test]
fn completion_racing_a_detach_drops_the_result_once_by_one_side() {
    loom::model(|| {
        let slot = Arc::new(JoinSlot::<Output>::new());
        let drops = Arc::new(AtomicUsize::new(0));
        let task = {
            let (slot, drops) = (slot.clone(), drops.clone());
            // The harness drops a result handed back to it.
            thread::spawn(move || slot.complete(Output(drops)).is_some())
        };
        let handle_dropped = slot.detach().is_some();
        let task_dropped = task.join().unwrap();
        assert!(
            task_dropped != handle_dropped,
            "dropped by the task: {task_dropped}, by the handle: {handle_dropped}"
        );
        // The slot is still alive: the result did not wait in it.
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        assert!(slot.is_finished());
    });
}

#[test]
fn a_cancel_after_completion_changes_nothing() {
    // The task's destructor reports a cancel unconditionally; a finished task keeps its result.
    loom::model(|| {
        let slot = Arc::new(JoinSlot::<u32>::new());
        let task = {
            let slot = slot.clone();
            thread::spawn(move || {
                assert_eq!(slot.complete(1), None);
                // The destructor's cancel: handed back, the first result stays.
                assert_eq!(slot.complete(2), Some(2));
            })
        };
        let aborter = {
            let slot = slot.clone();
            thread::spawn(move || slot.abort())
        };
        let got = loom::future::block_on(poll_fn(|cx| slot.poll_take(cx)));
        assert_eq!(got, 1);
        task.join().unwrap();
        aborter.join().unwrap();
        assert!(slot.is_aborted());
    });
}
