//! The hand-over of core 0's tokio runtime (and, where the stand-in runs core 0 itself, of
//! core 0's lease) between the stand-in thread and the threads in `block_on`, on the
//! production code: `tickless`'s `HandOver` (`runtime::tokio_hand_over`),
//! whose `left`, `entered` and `stop` core 0's `block_on` and the runtime's shutdown call
//! (through `runtime::tokio_stand_in::StandIn`), and whose `drive` is the stand-in thread's
//! body. In production `drive` runs each [`Turn`] with tokio's `Runtime::block_on`; here with
//! loom's `block_on`, inside which the model takes core 0's tokio runtime, as tokio's does.
//!
//! The runtime is a loom `UnsafeCell` that says who drives it: its driver takes it, checks it
//! at every poll of the turn, and gives it back. Whatever the interleaving, the `block_on`
//! thread takes it only once `entered` returned, and then finds nobody driving it (two
//! drivers at once fail the model: an assertion, or loom's report of a concurrent access); a
//! wake or a signal that is lost leaves a thread waiting for ever, which loom reports as a
//! deadlock; and a stop always ends the thread.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use loom::cell::UnsafeCell;
use loom::sync::{Condvar, Mutex};
use loom::thread;
use tickless::loom_exports::{HandOver, Lease, Turn};

/// Who drives core 0's tokio runtime.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Driver {
    /// Nobody: it is free.
    Nobody,
    /// The stand-in thread, in its `block_on`.
    StandIn,
    /// The thread in core 0's `block_on`.
    BlockOn,
}

/// Core 0's tokio runtime, as the model sees it: driven by one thread at a time.
struct Runtime {
    /// Who drives it now.
    driver: UnsafeCell<Driver>,
    /// How many times the stand-in took it, and a signal when that grows.
    turns: (Mutex<usize>, Condvar),
}

impl Runtime {
    /// A runtime nobody drives. (Not `Sync`, for loom's `UnsafeCell`, which loom's threads do
    /// not ask for: loom checks each use of the cell instead. std's `Arc`, not loom's: a
    /// failing model then reports its failure instead of aborting in loom's `Arc`'s drop.)
    #[allow(clippy::arc_with_non_send_sync)]
    fn new() -> Arc<Runtime> {
        Arc::new(Runtime {
            driver: UnsafeCell::new(Driver::Nobody),
            turns: (Mutex::new(0), Condvar::new()),
        })
    }

    /// `who` takes the runtime: nobody may drive it.
    fn take(&self, who: Driver) {
        // SAFETY: loom checks that no other thread touches the cell meanwhile.
        self.driver.with_mut(|d| unsafe {
            assert_eq!(
                *d,
                Driver::Nobody,
                "{who:?} takes the runtime {:?} drives",
                *d
            );
            *d = who;
        });
    }

    /// `who` runs the runtime's tasks: it must still hold it.
    fn check(&self, who: Driver) {
        // SAFETY: as in `take`.
        self.driver.with(|d| unsafe {
            assert_eq!(*d, who, "{who:?} drives the runtime {:?} holds", *d);
        });
    }

    /// `who` gives the runtime back.
    fn give_back(&self, who: Driver) {
        // SAFETY: as in `take`.
        self.driver.with_mut(|d| unsafe {
            assert_eq!(*d, who, "{who:?} gives back the runtime {:?} holds", *d);
            *d = Driver::Nobody;
        });
    }

    /// Waits until the stand-in has taken the runtime `n` times.
    fn wait_for_turns(&self, n: usize) {
        let mut turns = self.turns.0.lock().unwrap();
        while *turns < n {
            turns = self.turns.1.wait(turns).unwrap();
        }
    }
}

/// The stand-in's turn as its runtime's `block_on` polls it: a turn of the runtime's tasks
/// at each poll, on the runtime it holds.
struct Driven<'a> {
    turn: Turn<'a>,
    runtime: &'a Runtime,
}

impl Future for Driven<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.runtime.check(Driver::StandIn);
        Pin::new(&mut self.turn).poll(cx)
    }
}

/// The stand-in thread, started as `StandIn::left` starts it: `drive`, with a `block_on` that
/// holds the runtime while it runs; with `lease`, it runs core 0 itself, holding core 0's
/// lease for the turn (`core_zero`'s `DriveCoreZero`), else core 0's tokio runtime alone.
fn stand_in(
    hand_over: &Arc<HandOver>,
    runtime: &Arc<Runtime>,
    lease: Option<&Arc<Lease>>,
) -> thread::JoinHandle<()> {
    let hand_over = hand_over.clone();
    let runtime = runtime.clone();
    let lease = lease.cloned();
    thread::spawn(move || {
        hand_over.drive(|turn| {
            let _held = lease.as_ref().map(|l| l.take());
            runtime.take(Driver::StandIn);
            *runtime.turns.0.lock().unwrap() += 1;
            runtime.turns.1.notify_all();
            loom::future::block_on(Driven {
                turn,
                runtime: &runtime,
            });
            runtime.give_back(Driver::StandIn);
        });
    })
}

/// Core 0's `block_on`, as `CoreZero::block_on` orders it: `entered`, the lease, the runtime
/// driven, the lease given back, `left`.
fn block_on(hand_over: &HandOver, lease: &Lease, runtime: &Runtime) {
    hand_over.entered();
    {
        let _held = lease.take();
        runtime.take(Driver::BlockOn);
        runtime.check(Driver::BlockOn);
        runtime.give_back(Driver::BlockOn);
    }
    hand_over.left();
}

/// The first `block_on` of the runtime, which returns here (nobody drives the runtime yet):
/// the stand-in is started after it.
fn first_block_on(hand_over: &HandOver) {
    hand_over.entered();
    assert!(hand_over.left());
}

#[test]
fn entered_on_another_thread_returns_once_the_stand_in_gave_the_runtime_back() {
    loom::model(|| {
        let hand_over = Arc::new(HandOver::new());
        let runtime = Runtime::new();
        let lease = Arc::new(Lease::new());
        // The first `block_on` returns here: the stand-in is started.
        first_block_on(&hand_over);
        let thread = stand_in(&hand_over, &runtime, None);
        // The next one starts on another thread, whenever the stand-in is.
        let next = {
            let (hand_over, runtime) = (hand_over.clone(), runtime.clone());
            thread::spawn(move || block_on(&hand_over, &lease, &runtime))
        };
        next.join().unwrap();
        // The runtime's drop.
        hand_over.stop();
        thread.join().unwrap();
    });
}

#[test]
fn a_stop_ends_the_stand_in_wherever_it_is() {
    loom::model(|| {
        let hand_over = Arc::new(HandOver::new());
        let runtime = Runtime::new();
        first_block_on(&hand_over);
        let thread = stand_in(&hand_over, &runtime, None);
        // Before the thread's first wait, in it, before or in its turn.
        let stop = {
            let hand_over = hand_over.clone();
            thread::spawn(move || hand_over.stop())
        };
        stop.join().unwrap();
        thread.join().unwrap();
    });
}

#[test]
fn a_stop_racing_left_ends_the_stand_in() {
    loom::model(|| {
        let hand_over = Arc::new(HandOver::new());
        let runtime = Runtime::new();
        // The thread waits for its first `left`, which races the stop.
        hand_over.entered();
        let thread = stand_in(&hand_over, &runtime, None);
        let left = {
            let hand_over = hand_over.clone();
            thread::spawn(move || hand_over.left())
        };
        hand_over.stop();
        let _ = left.join().unwrap();
        thread.join().unwrap();
        // A `left` after the stop was refused: nothing is left to start.
        hand_over.entered();
        assert!(!hand_over.left());
    });
}

#[test]
fn each_left_wakes_the_stand_in_and_each_entered_wakes_its_turn() {
    loom::model(|| {
        let hand_over = Arc::new(HandOver::new());
        let runtime = Runtime::new();
        let lease = Arc::new(Lease::new());
        first_block_on(&hand_over);
        let thread = stand_in(&hand_over, &runtime, Some(&lease));
        // The stand-in drives (its turn polled or about to be) when the next `block_on`
        // starts: a lost wake leaves both waiting.
        runtime.wait_for_turns(1);
        block_on(&hand_over, &lease, &runtime);
        // Left again: the thread, waiting for it or about to, drives once more.
        runtime.wait_for_turns(2);
        block_on(&hand_over, &lease, &runtime);
        hand_over.stop();
        thread.join().unwrap();
    });
}

#[test]
fn a_block_on_waiting_for_the_lease_never_loses_it_to_the_stand_in() {
    loom::model(|| {
        let hand_over = Arc::new(HandOver::new());
        let runtime = Runtime::new();
        let lease = Arc::new(Lease::new());
        first_block_on(&hand_over);
        // The stand-in runs core 0 itself (it takes the lease for its turns).
        let thread = stand_in(&hand_over, &runtime, Some(&lease));
        // Two `block_on`s at once on two threads: the second waits for the lease while the
        // first holds it, and the first's `left` must not let the stand-in take it in
        // between (that would leave the second waiting for ever: a deadlock).
        let others: Vec<_> = (0..2)
            .map(|_| {
                let (hand_over, lease, runtime) =
                    (hand_over.clone(), lease.clone(), runtime.clone());
                thread::spawn(move || block_on(&hand_over, &lease, &runtime))
            })
            .collect();
        for other in others {
            other.join().unwrap();
        }
        hand_over.stop();
        thread.join().unwrap();
    });
}
