//! Another thread harvests a reactor's ready I/O (`Harvester`): it dispatches the events of the
//! reactor's registrations and wakes their tasks, hands the events of the reactor's own timerfd
//! and unparker back to the owner's next poll, and takes nothing while another thread holds
//! the reactor's key or once the reactor is gone.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use futures_lite::AsyncRead;
use tickless_io::internal::{Harvester, Reactor, TimerFd};
use tickless_io::UnixStream;

/// A task's waker: records that it was woken.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// One poll of a one-byte read of `stream` by the task of `flag`, on the current reactor.
fn poll_read(stream: &UnixStream, flag: &Arc<Flag>) -> Poll<io::Result<usize>> {
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    Pin::new(&mut &*stream).poll_read(&mut cx, &mut [0u8; 1])
}

/// A harvest on another thread: the events it took, and how many wakers.
fn harvest_elsewhere(harvester: Harvester) -> (Option<usize>, usize) {
    thread::spawn(move || {
        let mut wake = VecDeque::new();
        let taken = harvester.harvest(&mut wake);
        let n = wake.len();
        wake.into_iter().for_each(Waker::wake);
        (taken, n)
    })
    .join()
    .unwrap()
}

#[test]
fn a_harvest_wakes_the_tasks_of_ready_registrations_and_hands_back_the_owner_s_events(
) -> io::Result<()> {
    let (reactor, timer) = Reactor::with_timer()?;
    let _enter = reactor.enter();
    let (ours, mut peer) = std::os::unix::net::UnixStream::pair()?;
    let stream = UnixStream::from_std(ours)?;
    let task = Arc::new(Flag(AtomicBool::new(false)));
    assert!(poll_read(&stream, &task).is_pending());
    peer.write_all(b"x")?;
    // The owner's own descriptors are ready too: its timer expired, another thread unparked it.
    timer.arm(TimerFd::now_mono_ns());
    reactor.unparker().unpark();
    std::thread::sleep(Duration::from_millis(1));
    let (taken, woken) = harvest_elsewhere(reactor.harvester());
    assert_eq!(taken, Some(1), "one event of a registration");
    assert_eq!(woken, 1);
    assert!(task.0.load(Ordering::SeqCst), "the waiting task was woken");
    // The byte is the task's to read, on its own core.
    assert!(matches!(poll_read(&stream, &task), Poll::Ready(Ok(1))));
    // The owner's next poll reports what the harvester took of its own.
    let polled = reactor.poll(Some(Duration::from_secs(5)))?;
    assert!(polled.timer_event, "the timer's event was handed back");
    assert!(polled.unparked, "the unpark was handed back");
    Ok(())
}

#[test]
fn a_harvest_of_a_reactor_with_nothing_ready_takes_nothing() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let (taken, woken) = harvest_elsewhere(reactor.harvester());
    assert_eq!((taken, woken), (Some(0), 0));
    assert_eq!(
        reactor.poll(Some(Duration::ZERO))?.events,
        0,
        "nothing handed back"
    );
    Ok(())
}

#[test]
fn a_harvest_of_a_reactor_that_is_gone_takes_nothing() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let harvester = reactor.harvester();
    reactor.unparker().unpark();
    drop(reactor);
    assert_eq!(harvest_elsewhere(harvester), (None, 0));
    Ok(())
}
