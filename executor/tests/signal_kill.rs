//! `ctrl_c()` and `signal(SIGTERM)`: a signal sent to the process with `kill(2)` from another
//! thread completes the futures waiting for it, on every core that waits.
//!
//! In a binary of its own: the signals go to the whole process. Each test installs the handler
//! (by creating its `Signal`, which is what makes the signal safe to send) before any thread
//! sends it, so the default action (terminating the process) can never be taken; and the tests
//! use different signals, so they can run in parallel.

use std::future::{poll_fn, Future};
use std::io;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::thread;
use std::time::Duration;

use tickless::signal::{ctrl_c, signal, SignalKind};
use tickless::Builder;

/// Sends `signum` to this process from a new thread.
fn kill_from_thread(signum: libc::c_int) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        // SAFETY: kill takes no pointers; the handler for `signum` is installed.
        let rc = unsafe { libc::kill(libc::getpid(), signum) };
        assert_eq!(rc, 0, "kill: {}", io::Error::last_os_error());
    })
}

/// Raises `signum` on a new thread: the handler has run (the delivery is counted) by the time
/// the thread ends. A process-wide `kill` may run it later, on another thread.
fn raise_on_thread(signum: libc::c_int) {
    thread::spawn(move || {
        // SAFETY: raise takes no pointers; the handler for `signum` is installed.
        let rc = unsafe { libc::raise(signum) };
        assert_eq!(rc, 0, "raise: {}", io::Error::last_os_error());
    })
    .join()
    .expect("the raising thread does not panic");
}

#[test]
fn ctrl_c_completes_when_the_process_gets_sigint() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let mut waiting = pin!(ctrl_c());
        // The first poll installs the handler and starts listening.
        let first = poll_fn(|cx| Poll::Ready(waiting.as_mut().poll(cx))).await;
        assert!(first.is_pending(), "no SIGINT was sent yet");
        let killer = kill_from_thread(libc::SIGINT);
        waiting.await?;
        killer.join().expect("killer thread");
        io::Result::Ok(())
    })
}

#[test]
fn sigterm_wakes_every_core_that_listens() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let ready = Arc::new(AtomicBool::new(false));
    let r = ready.clone();
    // Core 1 listens with a `Signal` of its own, registered with its own reactor.
    let on_core_1 = rt.handle(1).spawn_pinned(move || async move {
        let mut term = signal(SignalKind::terminate())?;
        r.store(true, Ordering::SeqCst);
        term.recv().await;
        io::Result::Ok(tickless::core_id())
    });
    rt.block_on(async {
        let mut term = signal(SignalKind::terminate())?;
        assert_eq!(term.kind(), SignalKind::terminate());
        while !ready.load(Ordering::SeqCst) {
            tickless::time::sleep(Duration::from_millis(1)).await;
        }
        let killer = kill_from_thread(libc::SIGTERM);
        assert_eq!(term.recv().await, Some(()));
        assert_eq!(on_core_1.await??, 1);
        killer.join().expect("killer thread");
        io::Result::Ok(())
    })
}

#[test]
fn deliveries_between_two_recvs_coalesce_and_later_ones_are_seen() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let mut usr = signal(SignalKind::user_defined1())?;
        // Two deliveries nobody waits for: one `recv` takes both (signals are not queued).
        // Raised, not killed: with `kill` the second handler could still be pending on some
        // thread when `recv` runs, and count as a later delivery (4 runs in 100 failed so).
        raise_on_thread(libc::SIGUSR1);
        raise_on_thread(libc::SIGUSR1);
        usr.recv().await;
        let mut again = pin!(usr.recv());
        let pending = poll_fn(|cx| Poll::Ready(again.as_mut().poll(cx))).await;
        assert!(
            pending.is_pending(),
            "both deliveries were taken by one recv"
        );
        // A later delivery completes the next `recv`.
        kill_from_thread(libc::SIGUSR1).join().expect("killer");
        again.await;
        io::Result::Ok(())
    })
}

#[test]
fn signals_that_cannot_be_listened_for_are_refused() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        for signum in [libc::SIGKILL, libc::SIGSTOP, libc::SIGSEGV, 0, 1000] {
            let err = signal(SignalKind::from_raw(signum)).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "signal {signum}");
        }
    });
    Ok(())
}
