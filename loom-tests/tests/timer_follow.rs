//! A timer that follows its task: a `Sleep` first polled on core A, then polled on core B,
//! registers anew on B and cancels its entry on A through A's inbox
//! (`tickless`'s `worker::registry::remote_cancel`, the production path of `Sleep::poll_sleep`
//! on another core), while A's old entry may be firing at that very moment.
//!
//! On A's side the model runs the core's own steps in the order the loop does them: take the
//! inbox and apply each cancel to the wheel, expire what is due, and reuse the freed slot for a
//! timer of its own. Whatever the interleaving, the old entry fires or is cancelled, never
//! both and never neither, and the cancel, arriving after the fire, never touches the timer
//! that reused the slot (the handle's generation).
#![cfg(loom)]

use std::sync::Arc;

use loom::thread;
use tickless::loom_exports::{register, remote_cancel, Shared};
use tickless_io::internal::Reactor;
use tickless_timer::internal::Op;
use tickless_timer::{Config, FakeDevice, Slack, TimerQueue};

/// Applies what core A's inbox holds, as `Core::apply` does for cancels; returns how many
/// cancels took a timer out of the wheel.
fn drain_cancels(shared: &Shared, wheel: &mut TimerQueue<&'static str, FakeDevice>) -> usize {
    let mut ops = Vec::new();
    shared.inbox().drain(&mut ops);
    ops.into_iter()
        .filter(|op| matches!(op, Op::Cancel(h) if wheel.cancel(*h).is_some()))
        .count()
}

#[test]
fn a_timer_moved_to_another_core_is_cancelled_on_the_old_one_or_has_fired_there_once() {
    loom::model(|| {
        let reactor = Reactor::new().unwrap();
        let shared = Arc::new(Shared::for_model(reactor.unparker()));
        register(&shared);
        let core_a = shared.core_id();
        let mut wheel = TimerQueue::new(FakeDevice::default(), Config::default());
        let old = wheel.insert(1_000, Slack::None, "old entry");
        // Core B: the sleep's next poll, there, cancels the entry it left on A.
        let b = thread::spawn(move || remote_cancel(core_a, old));
        // Core A's loop: hand-overs, then expiry, then a timer of its own in the freed slot,
        // then hand-overs again.
        let mut cancelled = drain_cancels(&shared, &mut wheel);
        wheel.advance(1_000);
        let mut fired = 0;
        while let Some((_, value)) = wheel.pop_expired() {
            assert_eq!(value, "old entry");
            fired += 1;
        }
        let mine = wheel.insert(5_000, Slack::None, "A's own");
        b.join().unwrap();
        cancelled += drain_cancels(&shared, &mut wheel);
        assert_eq!(
            fired + cancelled,
            1,
            "fired {fired}, cancelled {cancelled}: the old entry must go exactly once"
        );
        assert_eq!(
            wheel.cancel(mine),
            Some("A's own"),
            "the stale cancel took the timer that reused the slot"
        );
    });
}

/// The same with a young entry (a sleep made for a duration, `TimerQueue::insert_young`): core
/// A settles it by its loop's reading (then it may fire at once), while core B's cancel races
/// that. Settled, fired, or cancelled young: the entry goes exactly once, and the stale cancel
/// never takes the young timer that reused its slot.
#[test]
fn a_young_timer_moved_to_another_core_is_cancelled_on_the_old_one_or_has_fired_there_once() {
    loom::model(|| {
        let reactor = Reactor::new().unwrap();
        let shared = Arc::new(Shared::for_model(reactor.unparker()));
        register(&shared);
        let core_a = shared.core_id();
        let mut wheel = TimerQueue::new(FakeDevice::default(), Config::default());
        let slack = wheel.prepare(Slack::None);
        let old = wheel.insert_young(1_000, slack, "old entry");
        let b = thread::spawn(move || remote_cancel(core_a, old));
        // Core A's loop: hand-overs, then the turn's reading settles (a span of 1,000 from 0),
        // then expiry at 1,000, then a young timer of its own in the freed slot, hand-overs.
        let mut cancelled = drain_cancels(&shared, &mut wheel);
        wheel.settle(0);
        wheel.advance(1_000);
        let mut fired = 0;
        while let Some((_, value)) = wheel.pop_expired() {
            assert_eq!(value, "old entry");
            fired += 1;
        }
        let mine = wheel.insert_young(5_000, slack, "A's own");
        b.join().unwrap();
        cancelled += drain_cancels(&shared, &mut wheel);
        assert_eq!(
            fired + cancelled,
            1,
            "fired {fired}, cancelled {cancelled}: the old entry must go exactly once"
        );
        assert!(
            wheel.has_young(),
            "the stale cancel took the young timer in the slot"
        );
        assert_eq!(wheel.cancel(mine), Some("A's own"));
        assert!(!wheel.has_young());
    });
}
