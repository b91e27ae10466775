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
