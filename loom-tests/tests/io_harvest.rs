//! Another thread harvesting a reactor's ready I/O (`tickless-io`'s `Harvester`, the key and
//! the atomic readiness word of `registration/scheduled.rs`) against the owner's own uses.
//!
//! - Against a task's wait and the owner's own poll: task T waits to read on the owner's core;
//!   a byte arrives; a harvester thread takes the event while the owner's thread polls the
//!   stream for task X and polls its reactor. Whatever the interleaving, T is woken, and X
//!   read or was woken, before anyone polls again (the level-triggered event would come back
//!   at the next poll and hide a lost wake). Storing a waiter without looking at the readiness
//!   again under the key (`ScheduledIo::wait`) fails here: X looks before the harvester
//!   records the event, the harvester takes the waiters before X stores its own, and X waits
//!   with the byte there.
//! - Against a registration's drop: the owner drops the stream while the harvester dispatches
//!   its event: no use of freed state (a slot leaves the slab under the key, and an event names
//!   it by key and generation).
//! - Against a move: the harvested task polls the stream on the harvester's own reactor (as a
//!   task moved by a harvest does), so the read moves there while the owner polls: every task
//!   is woken or reads.
//!
//! The reactors' epoll and eventfd are real descriptors: loom schedules the threads, the kernel
//! does the I/O in the order loom runs it.
#![cfg(loom)]

mod common;

use common::io_tasks::{not_lost, poll_read, task, woken};

use std::collections::VecDeque;
use std::io::Write;
use std::time::Duration;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use tickless_io::UnixStream;

use tickless_io::internal::Reactor;

/// A harvest of `harvester`'s reactor, and the wakes of what it took, as the harvesting core
/// does once it holds no lock; a harvest that finds the key held (the owner dispatching, or
/// waiting in a task's poll) is tried again, as the harvesting core would at its next look.
fn harvest(harvester: &tickless_io::internal::Harvester) {
    let mut wake = VecDeque::new();
    while harvester.harvest(&mut wake).is_none() {
        thread::yield_now();
    }
    while let Some(w) = wake.pop_front() {
        w.wake();
    }
}

/// T waits to read on the owner's core, a byte arrives, and a harvester thread takes the
/// event while the owner's thread runs `owner_side` (given the stream): T must be woken.
/// Returns what `owner_side` did, once the harvester is done.
fn harvest_against<R>(owner_side: impl FnOnce(&Reactor, &UnixStream) -> R) -> R {
    let owner = Reactor::new().unwrap();
    let _enter = owner.enter();
    let (ours, mut peer) = std::os::unix::net::UnixStream::pair().unwrap();
    let stream = UnixStream::from_std(ours).unwrap();
    let t = task();
    assert!(poll_read(&stream, &t).is_pending(), "nothing to read yet");
    peer.write_all(b"x").unwrap();
    let harvester = owner.harvester();
    let thief = thread::spawn(move || {
        harvest(&harvester);
    });
    let done = owner_side(&owner, &stream);
    thief.join().unwrap();
    assert!(woken(&t), "T was never woken");
    done
}

#[test]
fn a_harvest_racing_a_wait_loses_no_wakeup() {
    loom::model(|| {
        let x = harvest_against(|_, stream| {
            // Task X polls a read meanwhile; no poll follows before the check (a
            // level-triggered event would come back at the next one and hide a lost wake).
            let x = task();
            (poll_read(stream, &x).is_pending(), x)
        });
        // Checked once the harvester is done.
        let (pending, x) = x;
        assert!(
            !pending || woken(&x),
            "X waits, unwoken, with the byte there"
        );
    });
}

#[test]
fn a_harvest_racing_the_owner_s_poll_wakes_every_waiter() {
    loom::model(|| {
        let x = harvest_against(|owner, stream| {
            owner.poll(Some(Duration::ZERO)).unwrap();
            let x = task();
            (poll_read(stream, &x).is_pending(), x)
        });
        let (pending, x) = x;
        assert!(
            !pending || woken(&x),
            "X waits, unwoken, with the byte there"
        );
    });
}

#[test]
fn a_harvest_racing_a_registration_s_drop_uses_nothing_freed() {
    loom::model(|| {
        let owner = Reactor::new().unwrap();
        let _enter = owner.enter();
        let (ours, mut peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let stream = UnixStream::from_std(ours).unwrap();
        let t = task();
        assert!(poll_read(&stream, &t).is_pending(), "nothing to read yet");
        peer.write_all(b"x").unwrap();
        let harvester = owner.harvester();
        let thief = thread::spawn(move || harvest(&harvester));
        drop(stream);
        owner.poll(Some(Duration::ZERO)).unwrap();
        thief.join().unwrap();
        assert_eq!(owner.stats().registrations, 0, "the slot was freed");
    });
}

#[test]
fn a_harvested_task_moving_its_stream_loses_no_wakeup() {
    loom::model(|| {
        let owner = Reactor::new().unwrap();
        let _enter = owner.enter();
        let (ours, mut peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let stream = Arc::new(UnixStream::from_std(ours).unwrap());
        let t = task();
        assert!(poll_read(&stream, &t).is_pending(), "nothing to read yet");
        peer.write_all(b"x").unwrap();
        let harvester = owner.harvester();
        let owner_done = Arc::new(AtomicBool::new(false));
        let moved = {
            let (stream, owner_done) = (stream.clone(), owner_done.clone());
            thread::spawn(move || {
                let new = Reactor::new().unwrap();
                let _enter = new.enter();
                harvest(&harvester);
                // T, moved here by the harvest (or not woken yet: it polls here all the
                // same), reads on this core: the read direction moves.
                let m = task();
                let read = poll_read(&stream, &m);
                while !owner_done.load(Ordering::SeqCst) {
                    thread::yield_now();
                }
                new.poll(Some(Duration::ZERO)).unwrap();
                assert!(not_lost(&read, &m), "the moved read is lost: {read:?}");
                drop(stream);
            })
        };
        // The owner meanwhile turns, and X polls a read on it (moving the read back if it
        // left); then another byte for whoever waits, and the owner turns again.
        owner.poll(Some(Duration::ZERO)).unwrap();
        let x = task();
        let x_read = poll_read(&stream, &x);
        peer.write_all(b"z").unwrap();
        owner_done.store(true, Ordering::SeqCst);
        owner.poll(Some(Duration::ZERO)).unwrap();
        moved.join().unwrap();
        owner.poll(Some(Duration::ZERO)).unwrap();
        assert!(not_lost(&x_read, &x), "X's read is lost: {x_read:?}");
    });
}
