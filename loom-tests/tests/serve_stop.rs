//! The server's stop request (`tickless::net::Server`): a request made from any thread while
//! each core's accept loop polls for it. No loop may miss it and sleep on.
#![cfg(loom)]

use std::future::poll_fn;
use std::time::{Duration, Instant};

use loom::sync::Arc;
use loom::thread;
use tickless::loom_exports::Stop;

#[test]
fn a_stop_request_racing_two_accept_loops_reaches_both() {
    loom::model(|| {
        let stop = Arc::new(Stop::new(2));
        let loops: Vec<_> = (0..2)
            .map(|core| {
                let stop = stop.clone();
                // `block_on` parks until woken: a lost wakeup deadlocks, which loom reports.
                thread::spawn(move || loom::future::block_on(poll_fn(|cx| stop.poll(core, cx))))
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(1);
        stop.request(deadline);
        for l in loops {
            l.join().unwrap();
        }
        assert_eq!(stop.deadline(), Some(deadline));
    });
}

/// A request racing a loop that closes its listener (its loop ended, or its task was dropped):
/// the request shuts each listed socket down under the list's lock, and the loop unlists its
/// own before closing it, so the request never shuts a closed descriptor (whose number another
/// socket may have taken by then), and the socket is either shut by the request or unlisted by
/// its loop, once.
#[test]
fn a_stop_request_never_shuts_a_listener_its_loop_has_closed() {
    use loom::sync::atomic::{AtomicBool, Ordering};

    loom::model(|| {
        const FD: i32 = 7;
        let stop = Arc::new(Stop::new(1));
        let closed = Arc::new(AtomicBool::new(false));
        stop.list(0, FD);
        let looping = {
            let (stop, closed) = (stop.clone(), closed.clone());
            thread::spawn(move || {
                let unlisted = stop.unlist(0);
                closed.store(true, Ordering::Relaxed); // `close(2)`, after the unlist
                unlisted
            })
        };
        let shut = stop.request_with(Instant::now(), |fd| {
            assert_eq!(fd, FD);
            assert!(!closed.load(Ordering::Relaxed), "shut a closed descriptor");
        });
        let unlisted = looping.join().unwrap();
        assert_eq!(shut + usize::from(unlisted), 1);
    });
}
