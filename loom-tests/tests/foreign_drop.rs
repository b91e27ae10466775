//! A stream dropped on another thread than its core's (`tickless-io`'s `Home`): the dropping
//! thread takes the descriptor out of the epoll set, leaves the slab key in the orphan list and
//! unparks the reactor; the reactor frees the slot at a poll that found the unparker written.
//! Whatever the interleaving, one poll after the drop is enough to free the slot (no slot is
//! left waiting for an unpark that already happened), and a reactor dropped meanwhile loses
//! nothing.
//!
//! The reactor's epoll and eventfd are real descriptors: loom schedules the threads, the
//! kernel does the I/O in the order loom runs it.
#![cfg(loom)]

use std::io::Read;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_io::AsyncRead;
use loom::thread;
use tickless_io::UnixStream;

use tickless_io::internal::Reactor;

/// Polls a read of nothing on the current reactor: the stream's first poll, which registers it
/// there.
fn register(mut stream: &UnixStream) {
    let mut cx = Context::from_waker(Waker::noop());
    let polled = Pin::new(&mut stream).poll_read(&mut cx, &mut []);
    assert!(matches!(polled, Poll::Ready(Ok(0))));
}

#[test]
fn a_drop_elsewhere_racing_a_poll_is_freed_by_the_next_poll() {
    loom::model(|| {
        let reactor = Reactor::new().unwrap();
        let _enter = reactor.enter();
        let (a, b) = UnixStream::pair().unwrap();
        register(&a);
        register(&b);
        let dropper = thread::spawn(move || drop(a));
        // The core turns while the other thread drops.
        reactor.poll(Some(Duration::ZERO)).unwrap();
        dropper.join().unwrap();
        reactor.poll(Some(Duration::ZERO)).unwrap();
        let stats = reactor.stats();
        assert_eq!(
            (stats.registrations, stats.orphans_freed),
            (1, 1),
            "the dropped stream's slot is freed by the first poll after the drop"
        );
        drop(b);
    });
}

#[test]
fn two_drops_elsewhere_racing_a_poll_are_both_freed_by_the_next_poll() {
    loom::model(|| {
        let reactor = Reactor::new().unwrap();
        let _enter = reactor.enter();
        let (a, b) = UnixStream::pair().unwrap();
        register(&a);
        register(&b);
        let droppers = [
            thread::spawn(move || drop(a)),
            thread::spawn(move || drop(b)),
        ];
        reactor.poll(Some(Duration::ZERO)).unwrap();
        for dropper in droppers {
            dropper.join().unwrap();
        }
        reactor.poll(Some(Duration::ZERO)).unwrap();
        let stats = reactor.stats();
        assert_eq!((stats.registrations, stats.orphans_freed), (0, 2));
    });
}

#[test]
fn a_drop_elsewhere_racing_the_reactors_drop_closes_the_stream() {
    loom::model(|| {
        let reactor = Reactor::new().unwrap();
        let enter = reactor.enter();
        let (a, _b) = UnixStream::pair().unwrap();
        let (c, mut d) = std::os::unix::net::UnixStream::pair().unwrap();
        let c = UnixStream::from_std(c).unwrap();
        register(&a);
        register(&c);
        let dropper = thread::spawn(move || drop((a, c)));
        drop(enter);
        drop(reactor);
        dropper.join().unwrap();
        let mut buf = [0u8; 1];
        assert_eq!(d.read(&mut buf).unwrap(), 0, "the stream was closed");
    });
}
