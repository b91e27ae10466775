//! A stream moving between two reactors while a readiness event arrives on the old one, and a
//! stream read from two reactors at once (`tickless-io`'s `Registration`, the protocol in
//! `registration/bound.rs`).
//!
//! The move: the stream's first read completes on the old core (no task is left waiting
//! there). On another thread, task M polls the stream under a new reactor: a write, then a
//! read. Meanwhile the old reactor turns, task X polls a read on the old core, the peer sends a
//! byte (an event for the old reactor, or one a removal loses), and the old reactor turns
//! again: X may find the old binding, the new one (and bind the read there again), or the move
//! half done; M may find X waiting (the read then stays on both reactors) or not (it moves,
//! alone or with the write, and the descriptor leaves the old epoll set). Then another byte
//! comes and both reactors turn. Whatever the interleaving, no task is left waiting unwoken: X
//! and M each read or were woken. Nothing is freed while used: a `Bound` lives as long as its
//! registration, and a slot the old reactor frees is one no binding points to.
//!
//! Handing the old key over before the new binding is stored and the old one's `live` bits are
//! cleared (step 3c's hand-over before its clear and 3a's store) fails here: X, polled on the
//! old core after the old reactor took the key but before them, waits in the freed slot, and
//! no event or move reaches it.
//!
//! The shared read: task T waits to read on the old core, so M's read on the new one finds a
//! task waiting there and the read stays registered with both (one registration on the new
//! reactor, no slot freed on the old); X polls a read on the old core meanwhile (finding the
//! old binding, or the new one and then the old one live in the list), then bytes arrive. Each
//! reactor's event wakes its own waiters: T, X and M each read or were woken.
//!
//! The reactors' epoll and eventfd are real descriptors: loom schedules the threads, the kernel
//! does the I/O in the order loom runs it.
#![cfg(loom)]

mod common;

use common::io_tasks::{not_lost, poll_read, poll_write, task, woken};

use std::io::Write;
use std::task::Poll;
use std::time::Duration;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use tickless_io::UnixStream;

use tickless_io::internal::Reactor;

#[test]
fn a_stream_moving_between_reactors_while_an_event_reaches_the_old_one_loses_no_wakeup() {
    loom::model(|| {
        let old = Reactor::new().unwrap();
        let _enter = old.enter();
        let (ours, mut peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let stream = Arc::new(UnixStream::from_std(ours).unwrap());
        // The first read completes on the old core: nobody is left waiting there.
        peer.write_all(b"w").unwrap();
        assert!(matches!(poll_read(&stream, &task()), Poll::Ready(Ok(1))));
        let moved = Arc::new(AtomicBool::new(false));
        let last_byte_sent = Arc::new(AtomicBool::new(false));
        let mover = {
            let (stream, moved, last_byte_sent) =
                (stream.clone(), moved.clone(), last_byte_sent.clone());
            thread::spawn(move || {
                let new = Reactor::new().unwrap();
                let _enter = new.enter();
                let m = task();
                // The write moves first (the read along, or alone if X waits), then the read
                // (moved, or also bound here if X waits on the old core).
                assert!(matches!(poll_write(&stream, &m), Poll::Ready(Ok(1))));
                let read = poll_read(&stream, &m);
                moved.store(true, Ordering::SeqCst);
                while !last_byte_sent.load(Ordering::SeqCst) {
                    thread::yield_now();
                }
                new.poll(Some(Duration::ZERO)).unwrap();
                assert!(not_lost(&read, &m), "M's read is lost: {read:?}");
                drop(stream);
            })
        };
        // The old core meanwhile: the reactor turns, X polls a read, a byte arrives, the
        // reactor turns again.
        old.poll(Some(Duration::ZERO)).unwrap();
        let x = task();
        let x_read = poll_read(&stream, &x);
        peer.write_all(b"x").unwrap();
        old.poll(Some(Duration::ZERO)).unwrap();
        while !moved.load(Ordering::SeqCst) {
            thread::yield_now();
        }
        // Another byte, for whoever waits; both reactors turn.
        peer.write_all(b"z").unwrap();
        last_byte_sent.store(true, Ordering::SeqCst);
        old.poll(Some(Duration::ZERO)).unwrap();
        mover.join().unwrap();
        assert!(not_lost(&x_read, &x), "X's read is lost: {x_read:?}");
        drop(stream);
        old.poll(Some(Duration::ZERO)).unwrap();
    });
}

#[test]
fn a_stream_read_from_two_reactors_at_once_stays_on_both_and_loses_no_wakeup() {
    loom::model(|| {
        let old = Reactor::new().unwrap();
        let _enter = old.enter();
        let (ours, mut peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let stream = Arc::new(UnixStream::from_std(ours).unwrap());
        // T waits to read on the old core.
        let t = task();
        assert!(poll_read(&stream, &t).is_pending(), "nothing to read yet");
        let bound = Arc::new(AtomicBool::new(false));
        let last_byte_sent = Arc::new(AtomicBool::new(false));
        let reader = {
            let (stream, bound, last_byte_sent) =
                (stream.clone(), bound.clone(), last_byte_sent.clone());
            thread::spawn(move || {
                let new = Reactor::new().unwrap();
                let _enter = new.enter();
                let m = task();
                // T waits on the old core: the read stays there, and registers here too.
                let read = poll_read(&stream, &m);
                bound.store(true, Ordering::SeqCst);
                while !last_byte_sent.load(Ordering::SeqCst) {
                    thread::yield_now();
                }
                new.poll(Some(Duration::ZERO)).unwrap();
                assert!(not_lost(&read, &m), "M's read is lost: {read:?}");
                assert_eq!(
                    (new.stats().registered, new.stats().rebinds),
                    (1, 1),
                    "registered here once"
                );
                drop(stream);
                new.poll(Some(Duration::ZERO)).unwrap();
            })
        };
        // The old core meanwhile: X polls a read while M binds it; then bytes arrive, for
        // whoever waits, and both reactors turn.
        let x = task();
        let x_read = poll_read(&stream, &x);
        while !bound.load(Ordering::SeqCst) {
            thread::yield_now();
        }
        peer.write_all(b"x").unwrap();
        old.poll(Some(Duration::ZERO)).unwrap();
        peer.write_all(b"z").unwrap();
        last_byte_sent.store(true, Ordering::SeqCst);
        old.poll(Some(Duration::ZERO)).unwrap();
        assert!(woken(&t), "T, waiting on the old core, was never woken");
        assert!(not_lost(&x_read, &x), "X's read is lost: {x_read:?}");
        let stats = old.stats();
        assert_eq!(
            (stats.registered, stats.orphans_freed),
            (1, 0),
            "the old core keeps its registration"
        );
        reader.join().unwrap();
        drop(stream);
        old.poll(Some(Duration::ZERO)).unwrap();
    });
}
