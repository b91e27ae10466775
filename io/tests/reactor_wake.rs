//! Waking: the cross-thread unparker, task wakers (panicking ones included), and the
//! thread's current reactor.

mod common;

use std::io;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use futures_lite::{AsyncRead, AsyncWriteExt};
use tickless_io::pipe;

use tickless_io::internal::{Reactor, Unparker};

fn _unparker_is_send_sync_clone() {
    fn assert<T: Send + Sync + Clone + 'static>() {}
    assert::<Unparker>();
}

#[test]
fn unpark_from_another_thread_ends_a_blocking_poll() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let unparker = reactor.unparker();
    let other = thread::spawn(move || unparker.unpark());
    // Blocks until the other thread's unpark, whether it lands before or during the wait.
    let polled = loop {
        let polled = reactor.poll(None)?;
        if polled.unparked {
            break polled;
        }
    };
    other.join().expect("unparking thread panicked");
    assert!(polled.unparked);
    // Drained: not reported twice.
    assert!(!reactor.poll(Some(Duration::ZERO))?.unparked);
    assert_eq!(reactor.stats().unparks_received, 1);
    Ok(())
}

#[test]
fn many_unparks_before_a_poll_make_one_wakeup() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let unparker = reactor.unparker();
    for _ in 0..3 {
        unparker.clone().unpark();
    }
    assert!(reactor.poll(None)?.unparked);
    assert!(!reactor.poll(Some(Duration::ZERO))?.unparked);
    assert_eq!(reactor.stats().unparks_received, 1);
    Ok(())
}

/// A waker that counts wakes, and panics on them if asked to.
struct Counting {
    wakes: AtomicUsize,
    panic: bool,
}

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        assert!(!self.panic, "this waker panics on purpose");
    }
}

#[test]
fn a_panicking_waker_does_not_take_the_reactor_down() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _guard = reactor.enter();
    let (mut w1, mut r1) = pipe()?;
    let (mut w2, mut r2) = pipe()?;
    let bad = Arc::new(Counting {
        wakes: AtomicUsize::new(0),
        panic: true,
    });
    let good = Arc::new(Counting {
        wakes: AtomicUsize::new(0),
        panic: false,
    });
    let mut buf = [0u8; 4];
    for (r, waker) in [(&mut r1, &bad), (&mut r2, &good)] {
        let waker = Waker::from(Arc::clone(waker));
        let pending = std::pin::Pin::new(r).poll_read(&mut Context::from_waker(&waker), &mut buf);
        assert!(matches!(pending, Poll::Pending));
    }
    common::block_on(&reactor, async {
        w1.write_all(b"a").await?;
        w2.write_all(b"b").await
    })?;
    while good.wakes.load(Ordering::SeqCst) == 0 || bad.wakes.load(Ordering::SeqCst) == 0 {
        reactor.poll(None)?;
    }
    assert_eq!(reactor.stats().waker_panics, 1);
    // Still working afterwards.
    assert!(!reactor.poll(Some(Duration::ZERO))?.timer_event);
    Ok(())
}

#[test]
fn current_follows_enter_and_its_guards() -> io::Result<()> {
    let err = Reactor::with_current(|_| ()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::Other);
    assert_eq!(
        err.to_string(),
        "no tickless runtime is running on this thread"
    );
    // I/O types can be made anywhere; they register with the core that first polls them.
    assert!(pipe().is_ok());

    let outer = Reactor::new()?;
    let inner = Reactor::new()?;
    {
        let _outer = outer.enter();
        assert!(Reactor::with_current(|r| std::ptr::eq(r, &*outer))?);
        {
            let _inner = inner.enter();
            assert!(Reactor::with_current(|r| std::ptr::eq(r, &*inner))?);
        }
        assert!(Reactor::with_current(|r| std::ptr::eq(r, &*outer))?);
    }
    assert!(Reactor::with_current(|_| ()).is_err());
    Ok(())
}

#[test]
fn a_guard_kept_past_the_one_outside_it_holds_no_reactor_and_restores_nothing() -> io::Result<()> {
    let outer = Reactor::new()?;
    let inner = Reactor::new()?;
    let kept;
    {
        let _outer = outer.enter();
        kept = inner.enter();
    }
    // The outer guard took both out: nothing is current, and the thread holds neither (a
    // runtime's reactor never stays behind on a thread its runtime moved away from).
    assert!(Reactor::with_current(|_| ()).is_err());
    assert_eq!(Rc::strong_count(&outer), 1);
    assert_eq!(Rc::strong_count(&inner), 1);
    // Entered again to the same depth: the stale guard's drop leaves the new entries alone.
    let _again = outer.enter();
    let _inner_again = inner.enter();
    drop(kept);
    assert!(Reactor::with_current(|r| std::ptr::eq(r, &*inner))?);
    Ok(())
}

/// A waker that notes its name in a shared log when woken.
struct Logging {
    name: &'static str,
    log: Arc<std::sync::Mutex<Vec<&'static str>>>,
}

impl Wake for Logging {
    fn wake(self: Arc<Self>) {
        self.log.lock().unwrap().push(self.name);
    }
}

#[test]
fn every_task_waiting_in_a_direction_is_woken_once_in_the_order_they_waited() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _guard = reactor.enter();
    let (mut w, mut r) = pipe()?;
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let wakers: Vec<Waker> = ["first", "second", "third"]
        .into_iter()
        .map(|name| {
            Waker::from(Arc::new(Logging {
                name,
                log: Arc::clone(&log),
            }))
        })
        .collect();
    let mut buf = [0u8; 4];
    // The first and the second task poll twice: each is stored once.
    for waker in [&wakers[0], &wakers[0], &wakers[1], &wakers[1], &wakers[2]] {
        let pending =
            std::pin::Pin::new(&mut r).poll_read(&mut Context::from_waker(waker), &mut buf);
        assert!(matches!(pending, Poll::Pending));
    }
    common::block_on(&reactor, async { w.write_all(b"a").await })?;
    while log.lock().unwrap().len() < 3 {
        reactor.poll(None)?;
    }
    assert_eq!(*log.lock().unwrap(), ["first", "second", "third"]);
    // Woken once each: the list was emptied, and the byte is still there to read.
    assert!(!reactor.poll(Some(Duration::ZERO))?.timer_event);
    assert_eq!(log.lock().unwrap().len(), 3);
    let waker = &wakers[0];
    let read = std::pin::Pin::new(&mut r).poll_read(&mut Context::from_waker(waker), &mut buf);
    assert!(matches!(read, Poll::Ready(Ok(1))));
    Ok(())
}

std::thread_local! {
    /// The reactor a [`Reentrant`] waker polls.
    static REENTER: std::cell::RefCell<Option<Rc<Reactor>>> = const { std::cell::RefCell::new(None) };
}

/// A waker that polls this thread's [`REENTER`] reactor from inside its wake, then logs.
struct Reentrant {
    log: Arc<std::sync::Mutex<Vec<&'static str>>>,
}

impl Wake for Reentrant {
    fn wake(self: Arc<Self>) {
        REENTER.with(|r| {
            let reactor = r.borrow().clone().expect("the test sets the reactor");
            reactor.poll(Some(Duration::ZERO)).expect("re-entrant poll");
        });
        self.log.lock().unwrap().push("reentrant");
    }
}

#[test]
fn a_waker_may_poll_the_reactor_and_every_waker_still_runs_once() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _guard = reactor.enter();
    REENTER.with(|r| *r.borrow_mut() = Some(Rc::clone(&reactor)));
    let (mut w1, mut r1) = pipe()?;
    let (mut w2, mut r2) = pipe()?;
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let reentrant = Waker::from(Arc::new(Reentrant {
        log: Arc::clone(&log),
    }));
    let logging = Waker::from(Arc::new(Logging {
        name: "logging",
        log: Arc::clone(&log),
    }));
    let mut buf = [0u8; 4];
    for (r, waker) in [(&mut r1, &reentrant), (&mut r2, &logging)] {
        let pending = std::pin::Pin::new(r).poll_read(&mut Context::from_waker(waker), &mut buf);
        assert!(matches!(pending, Poll::Pending));
    }
    common::block_on(&reactor, async {
        w1.write_all(b"a").await?;
        w2.write_all(b"b").await
    })?;
    while log.lock().unwrap().len() < 2 {
        reactor.poll(None)?;
    }
    reactor.poll(Some(Duration::ZERO))?;
    let mut woken = log.lock().unwrap().clone();
    woken.sort_unstable();
    assert_eq!(woken, ["logging", "reentrant"], "each waker once");
    REENTER.with(|r| r.borrow_mut().take());
    Ok(())
}

#[test]
fn a_stream_s_reader_and_writer_are_woken_by_their_own_direction_only() -> io::Result<()> {
    use futures_lite::AsyncWrite;
    use std::pin::Pin;
    use tickless_io::UnixStream;

    let reactor = Reactor::new()?;
    let _guard = reactor.enter();
    let (mut a, mut b) = UnixStream::pair()?;
    let counting = || {
        Arc::new(Counting {
            wakes: AtomicUsize::new(0),
            panic: false,
        })
    };
    let (reader, writer) = (counting(), counting());
    let reader_waker = Waker::from(Arc::clone(&reader));
    let writer_waker = Waker::from(Arc::clone(&writer));
    let mut buf = vec![0u8; 64 * 1024];
    // A task waits to read `a`, another to write it: its send buffer is full.
    let read = Pin::new(&mut a).poll_read(&mut Context::from_waker(&reader_waker), &mut buf);
    assert!(read.is_pending());
    let mut sent = 0;
    while let Poll::Ready(n) =
        Pin::new(&mut a).poll_write(&mut Context::from_waker(&writer_waker), &buf)
    {
        sent += n?;
    }
    assert!(sent > 0);

    // `a` becomes readable: its reader is woken, its writer is not.
    common::block_on(&reactor, async { b.write_all(b"x").await })?;
    while reader.wakes.load(Ordering::SeqCst) == 0 {
        reactor.poll(None)?;
    }
    reactor.poll(Some(Duration::ZERO))?;
    assert_eq!(writer.wakes.load(Ordering::SeqCst), 0);

    // `a` becomes writable once `b` has read what it sent: now its writer is woken.
    let noop = Waker::noop();
    let mut drained = 0;
    while drained < sent {
        match Pin::new(&mut b).poll_read(&mut Context::from_waker(noop), &mut buf) {
            Poll::Ready(n) => drained += n?,
            Poll::Pending => {
                reactor.poll(Some(Duration::from_millis(10)))?;
            }
        }
    }
    while writer.wakes.load(Ordering::SeqCst) == 0 {
        reactor.poll(None)?;
    }
    assert_eq!(reader.wakes.load(Ordering::SeqCst), 1);
    Ok(())
}
