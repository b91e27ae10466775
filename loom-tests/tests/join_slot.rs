//! The join slot (`tickless`'s `JoinHandle` protocol): a task completing on its core while its
//! handle is awaited, or dropped, on another thread. The result is delivered exactly once and
//! the waiter is never left asleep.
#![cfg(loom)]

use std::future::poll_fn;

use loom::sync::Arc;
use loom::thread;
use tickless::loom_exports::JoinSlot;

#[test]
fn completion_racing_an_await_wakes_the_waiter() {
    loom::model(|| {
        let slot = Arc::new(JoinSlot::<u32>::new());
        let task = {
            let slot = slot.clone();
            thread::spawn(move || slot.complete(42))
        };
        // `block_on` parks until woken: a lost wakeup deadlocks, which loom reports.
        let got = loom::future::block_on(poll_fn(|cx| slot.poll_take(cx)));
        assert_eq!(got, 42);
        task.join().unwrap();
        assert!(slot.is_finished());
    });
}

#[test]
fn completion_racing_a_drop_of_the_handle() {
    loom::model(|| {
        let slot = Arc::new(JoinSlot::<Arc<()>>::new());
        let value = Arc::new(());
        let task = {
            let (slot, value) = (slot.clone(), value.clone());
            thread::spawn(move || slot.complete(value))
        };
        // The handle is dropped on this thread while the task completes on its own.
        drop(slot);
        task.join().unwrap();
        // Whichever side dropped the slot last dropped the result with it: nothing leaks.
        assert_eq!(Arc::strong_count(&value), 1);
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
                slot.complete(1);
                slot.complete(2); // the destructor's cancel
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
