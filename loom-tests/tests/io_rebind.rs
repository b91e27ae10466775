//! A stream moving between two reactors while a readiness event arrives on the old one
//! (`tickless-io`'s `Registration`, the protocol in `registration/bound.rs`).
//!
//! Task T waits to read on the old core. On another thread, task M polls the stream under a
//! new reactor: a write, then a read, so both directions move and the descriptor leaves the
//! old epoll set. Meanwhile the peer sends a byte (an event for the old reactor, or one the
//! removal loses), the old reactor turns, and task X polls a read on the old core: it may find
//! the old binding, the new one (and move the read back), or the move half done. Then another
//! byte comes and both reactors turn. Whatever the interleaving, no task is left waiting
//! unwoken: T, X and M each read or were woken. Nothing is freed while used: a `Bound` lives
//! as long as its registration, and a slot the old reactor frees is one no binding points to.
//!
//! Storing the new binding after handing the old key over (steps 3b and 3c swapped) fails
//! here: X, polled on the old core after the old reactor took the key but before the store,
//! waits in the freed slot, and no event or move reaches it.
//!
//! The reactors' epoll and eventfd are real descriptors: loom schedules the threads, the kernel
//! does the I/O in the order loom runs it.
#![cfg(loom)]

use std::io::{self, Write};
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use futures_io::{AsyncRead, AsyncWrite};
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use tickless_io::UnixStream;

use tickless_io::internal::Reactor;

/// A task's waker: records that it was woken.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A task: its waker's flag.
fn task() -> std::sync::Arc<Flag> {
    std::sync::Arc::new(Flag(AtomicBool::new(false)))
}

/// Whether `t` was woken.
fn woken(t: &std::sync::Arc<Flag>) -> bool {
    t.0.load(Ordering::SeqCst)
}

/// One poll of a one-byte read of `stream` by task `t`, on the current reactor.
fn poll_read(stream: &UnixStream, t: &std::sync::Arc<Flag>) -> Poll<io::Result<usize>> {
    let waker = Waker::from(t.clone());
    let mut cx = Context::from_waker(&waker);
    Pin::new(&mut &*stream).poll_read(&mut cx, &mut [0u8; 1])
}

/// One poll of a one-byte write to `stream` by task `t`, on the current reactor.
fn poll_write(stream: &UnixStream, t: &std::sync::Arc<Flag>) -> Poll<io::Result<usize>> {
    let waker = Waker::from(t.clone());
    let mut cx = Context::from_waker(&waker);
    Pin::new(&mut &*stream).poll_write(&mut cx, b"m")
}

/// Read, or still waiting and woken since: not lost.
fn not_lost(polled: &Poll<io::Result<usize>>, t: &std::sync::Arc<Flag>) -> bool {
    match polled {
        Poll::Ready(result) => {
            assert!(result.is_ok(), "{result:?}");
            true
        }
        Poll::Pending => woken(t),
    }
}

#[test]
fn a_stream_moving_between_reactors_while_an_event_reaches_the_old_one_loses_no_wakeup() {
    loom::model(|| {
        let old = Reactor::new().unwrap();
        let _enter = old.enter();
        let (ours, mut peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let stream = Arc::new(UnixStream::from_std(ours).unwrap());
        // T waits to read on the old core.
        let t = task();
        assert!(poll_read(&stream, &t).is_pending(), "nothing to read yet");
        let moved = Arc::new(AtomicBool::new(false));
        let last_byte_sent = Arc::new(AtomicBool::new(false));
        let mover = {
            let (stream, moved, last_byte_sent) =
                (stream.clone(), moved.clone(), last_byte_sent.clone());
            thread::spawn(move || {
                let new = Reactor::new().unwrap();
                let _enter = new.enter();
                let m = task();
                // The write moves first (the old core keeps the read), then the read: no
                // direction is left on the old core.
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
        // The old core meanwhile: a byte arrives, the reactor turns, X polls a read.
        peer.write_all(b"x").unwrap();
        old.poll(Some(Duration::ZERO)).unwrap();
        let x = task();
        let x_read = poll_read(&stream, &x);
        while !moved.load(Ordering::SeqCst) {
            thread::yield_now();
        }
        // Another byte, for whoever waits; both reactors turn.
        peer.write_all(b"z").unwrap();
        last_byte_sent.store(true, Ordering::SeqCst);
        old.poll(Some(Duration::ZERO)).unwrap();
        mover.join().unwrap();
        assert!(
            woken(&t),
            "T, left waiting on the old core, was never woken"
        );
        assert!(not_lost(&x_read, &x), "X's read is lost: {x_read:?}");
        drop(stream);
        old.poll(Some(Duration::ZERO)).unwrap();
    });
}
