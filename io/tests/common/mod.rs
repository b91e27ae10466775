//! The tiny executor the integration tests drive futures with: there is no runtime here.

use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tickless_io::internal::Reactor;

/// How long one blocking poll may find nothing before the test is declared stuck. A hang
/// guard only: no test asserts on how long anything takes.
const STALL: Duration = Duration::from_secs(60);

/// A waker that raises a flag.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

// Each test binary compiles this module anew and not all use both helpers.
#[allow(dead_code)]
/// Polls `fut` to completion on this thread, blocking in `reactor.poll` while it is pending.
pub fn block_on<F: Future>(reactor: &Reactor, fut: F) -> F::Output {
    let flag = Arc::new(Flag(AtomicBool::new(true)));
    let waker = Waker::from(Arc::clone(&flag));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if flag.0.swap(false, Ordering::SeqCst) {
            if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
                return out;
            }
            continue;
        }
        let polled = reactor.poll(Some(STALL)).expect("Reactor::poll failed");
        assert!(
            polled.events > 0 || flag.0.load(Ordering::SeqCst),
            "test stuck: nothing happened for {STALL:?}"
        );
    }
}

#[allow(dead_code)]
/// Creates a reactor, enters it, and runs `fut` on it.
pub fn run<T>(fut: impl Future<Output = io::Result<T>>) -> io::Result<T> {
    let reactor = Reactor::new()?;
    let _guard = reactor.enter();
    block_on(&reactor, fut)
}
