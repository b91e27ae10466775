//! The reactor's two waits, `poll` (epoll_wait, milliseconds) and `poll_precise`
//! (epoll_pwait2, nanoseconds): no timeout waits for an event, a timeout ends a wait with
//! nothing seen, a precise poll tells a timeout from an event, a signal is "nothing seen", and
//! the thread's kernel timer slack comes back. Nothing here reads the clock.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tickless_io::internal::Reactor;

#[test]
fn a_wait_without_a_timeout_lasts_until_an_event() {
    let reactor = Reactor::new().expect("a reactor");
    for round in 0..2 {
        let unparker = reactor.unparker();
        let waker = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            unparker.unpark();
        });
        let polled = if round == 0 {
            reactor.poll(None)
        } else {
            match reactor.poll_precise(None) {
                Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                    waker.join().expect("no panic");
                    reactor.poll(None).expect("drains the unpark");
                    continue;
                }
                other => other,
            }
        }
        .expect("a wait");
        waker.join().expect("the unparking thread does not panic");
        assert!(
            polled.unparked,
            "round {round}: returned before the event: {polled:?}"
        );
        assert!(!polled.timer_event, "round {round}: {polled:?}");
    }
}

#[test]
fn a_timeout_ends_a_wait_and_a_precise_one_says_it_timed_out() {
    let reactor = Reactor::new().expect("a reactor");
    // A part below the millisecond, which `poll` rounds up.
    let timeout = Duration::from_micros(2_500);
    let first = reactor.poll(Some(timeout)).expect("epoll_wait");
    assert_eq!(first.events, 0);
    assert!(
        !first.timer_event && !first.unparked && !first.interrupted,
        "{first:?}"
    );
    match reactor.poll_precise(Some(timeout)) {
        Ok(p) => {
            assert!(
                p.timer_event,
                "a wait that timed out is the device firing: {p:?}"
            );
            assert_eq!(p.events, 0);
        }
        Err(e) => assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}"),
    }
}

#[test]
fn a_precise_wait_ended_by_an_event_did_not_time_out() {
    let reactor = Reactor::new().expect("a reactor");
    reactor.unparker().unpark();
    match reactor.poll_precise(Some(Duration::from_secs(5))) {
        Ok(p) => {
            assert!(p.unparked, "{p:?}");
            assert!(!p.timer_event, "an event is not a timeout: {p:?}");
        }
        Err(e) => assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}"),
    }
}

/// The calling thread's kernel timer slack, in ns.
fn timer_slack() -> u64 {
    // SAFETY: PR_GET_TIMERSLACK takes no pointers.
    let ns = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    u64::try_from(ns).expect("prctl(PR_GET_TIMERSLACK) succeeds")
}

#[test]
fn the_precise_timer_slack_is_the_threads_and_comes_back() {
    thread::spawn(|| {
        let before = timer_slack();
        assert!(
            before > 1,
            "a thread starts with the default 50 µs slack, not {before} ns"
        );
        let old = Reactor::precise_timer_slack();
        assert_eq!(old, before, "it returns the slack the thread had");
        assert_eq!(timer_slack(), 1);
        Reactor::restore_timer_slack(old);
        assert_eq!(timer_slack(), before);
    })
    .join()
    .expect("the thread's assertions hold");
}

extern "C" fn ignore(_: libc::c_int) {}

#[test]
fn a_signal_that_interrupts_a_wait_is_nothing_seen() {
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the handler does
    // nothing, so it is async-signal-safe. No SA_RESTART: epoll waits are never restarted
    // anyway.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ignore as extern "C" fn(libc::c_int) as libc::sighandler_t;
        assert_eq!(
            libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()),
            0
        );
    }
    let reactor = Reactor::new().expect("a reactor");
    // SAFETY: pthread_self has no preconditions.
    let me = unsafe { libc::pthread_self() };
    for precise in [false, true] {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        // Signals until the wait has returned: one that lands before the wait starts only
        // runs the handler.
        let signaller = thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(10));
                // SAFETY: `me` is the test's thread, alive until this thread is joined.
                unsafe { libc::pthread_kill(me, libc::SIGUSR1) };
            }
        });
        let polled = if precise {
            reactor.poll_precise(None)
        } else {
            reactor.poll(None)
        };
        done.store(true, Ordering::SeqCst);
        signaller
            .join()
            .expect("the signalling thread does not panic");
        let polled = match polled {
            Err(e) if precise && e.kind() == io::ErrorKind::Unsupported => continue,
            other => other.expect("EINTR is not an error"),
        };
        assert!(polled.interrupted, "precise {precise}: {polled:?}");
        assert_eq!(polled.events, 0);
        assert!(!polled.timer_event, "an interrupted wait did not time out");
    }
}
