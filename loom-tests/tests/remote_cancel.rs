//! A `Sleep` dropped on another thread than its core's cancels its timer through the core's
//! inbox (`tickless`'s `worker::registry::remote_cancel`: the registry's lookup of the core, then
//! the inbox's push), on the production code, racing the core's close at its shutdown
//! (`worker::shutdown::close`: the inbox closed, the core taken out of the registry).
//!
//! Whatever the interleaving, the cancel is taken by the close (the core drops what it took,
//! on its thread) or refused (the core is gone from the registry, or its inbox is closed): it
//! is never left in the inbox after the close, where nobody would take it, and never taken
//! twice.
#![cfg(loom)]

// `std`'s `Arc`, as in the executor: the registry keeps `Weak`s of the cores' shared halves.
use std::sync::Arc;

use loom::thread;
use tickless::loom_exports::{close, register, remote_cancel, Shared};
use tickless_io::internal::Reactor;
use tickless_timer::internal::Op;
use tickless_timer::{Config, FakeDevice, Slack, TimerQueue};

#[test]
fn a_remote_cancel_racing_its_core_s_close_is_taken_once_or_refused() {
    loom::model(|| {
        let reactor = Reactor::new().unwrap();
        let shared = Arc::new(Shared::for_model(reactor.unparker()));
        register(&shared);
        let core = shared.core_id();
        // A timer of that core, as a `Sleep` would hold its handle.
        let mut wheel = TimerQueue::new(FakeDevice::default(), Config::default());
        let handle = wheel.insert(1_000, Slack::None, ());
        let canceller = thread::spawn(move || remote_cancel(core, handle));
        let taken = close(&shared);
        canceller.join().unwrap();
        let mut after = Vec::new();
        shared.inbox().drain(&mut after);
        assert!(after.is_empty(), "a cancel entered the closed inbox");
        let cancels = taken
            .iter()
            .filter(|op| matches!(op, Op::Cancel(h) if *h == handle))
            .count();
        assert!(cancels <= 1, "taken {cancels} times");
    });
}
