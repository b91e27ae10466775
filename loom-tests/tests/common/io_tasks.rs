//! A model task of the I/O models: a waker that records its wake, and one poll of a one-byte
//! read or write of a stream on the current reactor.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};

use futures_io::{AsyncRead, AsyncWrite};
use loom::sync::atomic::{AtomicBool, Ordering};
use tickless_io::UnixStream;

/// A task's waker: records that it was woken.
pub struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A task: its waker's flag.
pub fn task() -> std::sync::Arc<Flag> {
    std::sync::Arc::new(Flag(AtomicBool::new(false)))
}

/// Whether `t` was woken.
pub fn woken(t: &std::sync::Arc<Flag>) -> bool {
    t.0.load(Ordering::SeqCst)
}

/// One poll of a one-byte read of `stream` by task `t`, on the current reactor.
pub fn poll_read(stream: &UnixStream, t: &std::sync::Arc<Flag>) -> Poll<io::Result<usize>> {
    let waker = Waker::from(t.clone());
    let mut cx = Context::from_waker(&waker);
    Pin::new(&mut &*stream).poll_read(&mut cx, &mut [0u8; 1])
}

/// One poll of a one-byte write to `stream` by task `t`, on the current reactor.
pub fn poll_write(stream: &UnixStream, t: &std::sync::Arc<Flag>) -> Poll<io::Result<usize>> {
    let waker = Waker::from(t.clone());
    let mut cx = Context::from_waker(&waker);
    Pin::new(&mut &*stream).poll_write(&mut cx, b"m")
}

/// Read, or still waiting and woken since: not lost.
pub fn not_lost(polled: &Poll<io::Result<usize>>, t: &std::sync::Arc<Flag>) -> bool {
    match polled {
        Poll::Ready(result) => {
            assert!(result.is_ok(), "{result:?}");
            true
        }
        Poll::Pending => woken(t),
    }
}
