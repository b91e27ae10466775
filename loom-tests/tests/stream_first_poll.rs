//! A stream made on one core and first polled on another (`tickless-io`'s `Registration`):
//! the accepting core makes it and hands it on without registering it; the core that polls it
//! first registers it with its own reactor. Here the maker keeps a reference and drops it while
//! the other core binds, polls and drops its own. Whatever the interleaving, the stream is
//! registered once, with the polling core, its slot there is freed (at once, or by that
//! reactor's next poll when the last reference is dropped on the maker's thread), and the
//! descriptor is closed: the peer reads end of file.
//!
//! The reactors' epoll and eventfd are real descriptors: loom schedules the threads, the kernel
//! does the I/O in the order loom runs it.
#![cfg(loom)]

use std::io::Read;
use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::Duration;

use futures_io::AsyncRead;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use tickless_io::UnixStream;

use tickless_io::internal::Reactor;

#[test]
fn a_stream_first_polled_on_another_core_racing_a_drop_on_its_maker() {
    loom::model(|| {
        // The maker: a core of its own (as an accept loop's), whose reactor the stream never
        // registers with.
        let maker = Reactor::new().unwrap();
        let _maker = maker.enter();
        let (ours, mut peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let stream = Arc::new(UnixStream::from_std(ours).unwrap());
        let maker_dropped = Arc::new(AtomicBool::new(false));
        let poller = {
            let (stream, maker_dropped) = (stream.clone(), maker_dropped.clone());
            thread::spawn(move || {
                let reactor = Reactor::new().unwrap();
                let _enter = reactor.enter();
                // The first poll: a read with nothing queued registers the stream here and
                // waits.
                let mut cx = Context::from_waker(Waker::noop());
                let polled = Pin::new(&mut &*stream).poll_read(&mut cx, &mut [0u8; 1]);
                assert!(polled.is_pending(), "nothing to read yet");
                assert_eq!(
                    reactor.stats().registrations,
                    1,
                    "registered with this core"
                );
                drop(stream);
                while !maker_dropped.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                // Dropped here last, it left at once; dropped by the maker last, it left the
                // epoll set there and this poll frees its slot.
                reactor.poll(Some(Duration::ZERO)).unwrap();
                assert_eq!(reactor.stats().registrations, 0, "its slot is freed");
            })
        };
        drop(stream);
        maker_dropped.store(true, Ordering::Release);
        poller.join().unwrap();
        maker.poll(Some(Duration::ZERO)).unwrap();
        assert_eq!(maker.stats().registrations, 0, "never the maker's");
        let mut buf = [0u8; 1];
        assert_eq!(peer.read(&mut buf).unwrap(), 0, "the stream was closed");
    });
}
