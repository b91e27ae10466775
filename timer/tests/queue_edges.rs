//! Bad and odd input: zero and huge deadlines, the past, double and stale cancels, timers added
//! while others fire, and a million pending timers.

use std::time::Duration;

use tickless_timer::internal::Wheel;
use tickless_timer::{Config, FakeDevice, RearmPolicy, Slack, TimerQueue};

fn queue() -> TimerQueue<u64, FakeDevice> {
    TimerQueue::new(FakeDevice::default(), Config::default())
}

#[test]
fn zero_duration_fires_at_the_next_advance() {
    let mut q = queue();
    q.advance(5_000);
    q.insert(5_000, Slack::None, 1);
    assert_eq!(q.on_idle(), Some(5_000), "armed for now: fires at once");
    q.advance(5_000);
    assert_eq!(q.pop_expired().map(|(_, v)| v), Some(1));
}

#[test]
fn deadlines_in_the_past_fire_at_once_in_order() {
    let mut q = queue();
    q.advance(1_000_000);
    q.insert(10, Slack::None, 2);
    q.insert(0, Slack::None, 1);
    q.advance(1_000_000);
    let fired: Vec<_> = std::iter::from_fn(|| q.pop_expired().map(|(_, v)| v)).collect();
    assert_eq!(fired, [2, 1], "both were due at insert: insertion order");
}

#[test]
fn max_deadline_is_clamped_and_never_panics() {
    for res in [1, 1_000, 1_000_000_007] {
        let mut q = TimerQueue::new(
            FakeDevice::default(),
            Config {
                resolution: Duration::from_nanos(res),
                ..Config::default()
            },
        );
        q.advance(12_345);
        let h = q.insert(u64::MAX, Slack::Bounded(Duration::MAX), 1);
        let armed = q.on_idle().unwrap();
        assert!(armed > u64::MAX - res, "armed at the end of the range");
        q.advance(u64::MAX - res);
        assert!(q.pop_expired().is_none());
        assert!(q.contains(h));
        q.advance(u64::MAX);
        assert_eq!(q.pop_expired().map(|(_, v)| v), Some(1));
    }
}

#[test]
fn cancelling_twice_and_stale_handles_are_no_ops() {
    let mut q = queue();
    let a = q.insert(100_000, Slack::None, 1);
    assert_eq!(q.cancel(a), Some(1));
    assert_eq!(q.cancel(a), None);
    // The entry is reused by b: a's handle must not reach it.
    let b = q.insert(200_000, Slack::None, 2);
    assert_eq!(q.cancel(a), None);
    assert!(!q.reset(a, 1, Slack::None));
    assert!(q.contains(b));
    q.advance(200_000);
    let (fired, v) = q.pop_expired().unwrap();
    assert_eq!((fired, v), (b, 2));
    assert_eq!(q.cancel(b), None, "cancel after fire");
    assert_eq!(q.stats().cancels, 1);
}

#[test]
fn timers_inserted_while_others_fire() {
    let mut q = queue();
    for i in 0..3 {
        q.insert(1_000 + i, Slack::None, i);
    }
    q.advance(10_000);
    let mut fired = vec![q.pop_expired().unwrap().1];
    // Added mid-drain: one already due (fires in this drain), one in the future (does not).
    q.insert(5_000, Slack::None, 10);
    q.insert(20_000, Slack::None, 11);
    fired.extend(std::iter::from_fn(|| q.pop_expired().map(|(_, v)| v)));
    assert_eq!(fired, [0, 1, 2, 10]);
    q.advance(20_000);
    assert_eq!(q.pop_expired().map(|(_, v)| v), Some(11));
}

#[test]
fn cancel_while_due_but_not_popped() {
    let mut q = queue();
    let a = q.insert(10_000, Slack::None, 1);
    q.insert(10_000, Slack::None, 2);
    q.advance(10_000);
    assert_eq!(q.cancel(a), Some(1));
    assert_eq!(q.pop_expired().map(|(_, v)| v), Some(2));
    assert!(q.pop_expired().is_none());
}

#[test]
fn a_million_pending_timers() {
    const N: u64 = 1_000_000;
    let mut w = Wheel::with_capacity(N as usize);
    // A cheap deterministic spread over 100 s of microsecond ticks.
    let tick = |i: u64| 1 + (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) % 100_000_000;
    let handles: Vec<_> = (0..N).map(|i| w.insert(tick(i), false, i)).collect();
    assert_eq!(w.len(), N as usize);
    // Cancel every tenth.
    for h in handles.iter().step_by(10) {
        assert!(w.remove(*h).is_some());
    }
    let mut fired = 0u64;
    let mut last = 0;
    let mut now = 0;
    while let Some(next) = w.next_expiration() {
        now = next.max(now + 997);
        w.advance(now);
        while let Some((_, i)) = w.pop_due() {
            assert!(i % 10 != 0, "a cancelled timer fired");
            assert!(tick(i) <= now && tick(i) >= last);
            last = tick(i);
            fired += 1;
        }
    }
    assert_eq!(fired, N - N / 10);
    assert!(w.is_empty());
    let _ = RearmPolicy::default();
}

#[test]
fn a_value_kept_by_a_cancel_is_reused_in_place_once_and_released_by_the_next_cancel() {
    let mut q = queue();
    let slack = q.prepare(Slack::None);
    assert_eq!(
        q.insert_reusing(1_000, slack, |_| true),
        None,
        "nothing kept yet"
    );
    let a = q.insert_prepared(1_000, slack, 1);
    q.on_idle(); // armed for a: the next timers wait detached
    let b = q.insert_prepared(2_000, slack, 2);
    assert_eq!(q.cancel_retaining(b), None, "kept, nothing released");
    assert_eq!(
        q.cancel_retaining(b),
        None,
        "a stale handle changes nothing"
    );
    assert!(!q.contains(b));
    assert_eq!(q.len(), 1);
    assert_eq!(
        q.insert_reusing(3_000, slack, |&v| v == 9),
        None,
        "refused: kept"
    );
    let c = q.insert_reusing(3_000, slack, |&v| v == 2).expect("reused");
    assert_ne!(c, b, "a new handle");
    assert!(!q.contains(b), "the old one stays stale");
    assert_eq!(
        q.insert_reusing(3_000, slack, |_| true),
        None,
        "reused once"
    );
    // A cancel of a placed timer keeps its value too, and releases the one kept before.
    assert_eq!(q.cancel_retaining(a), None);
    assert_eq!(q.cancel_retaining(c), Some(1), "a's value, released");
    assert_eq!(q.stats().cancels, 3);
    q.advance(10_000);
    assert_eq!(q.pop_expired(), None, "cancelled timers never fire");
    let d = q
        .insert_reusing(20_000, slack, |_| true)
        .expect("c's value");
    q.advance(20_000);
    assert_eq!(q.pop_expired(), Some((d, 2)));
    let e = q.insert_prepared(30_000, slack, 5);
    q.cancel_retaining(e);
    q.insert_prepared(40_000, slack, 4);
    assert_eq!(q.drain(), [4, 5], "pending, then the kept value");
    assert_eq!(q.take_retained(), None);
}

#[test]
fn a_kept_value_reused_as_a_deferrable_timer_counts_as_one_deferrable_timer() {
    let mut q = queue();
    let deferrable = q.prepare(Slack::Unbounded);
    let t = q.insert_prepared(1_000, deferrable, 1);
    assert_eq!(q.cancel_retaining(t), None);
    q.on_idle();
    assert!(!q.needs_clock(), "nothing pending");
    let t = q
        .insert_reusing(2_000, deferrable, |&v| v == 1)
        .expect("reused");
    q.on_idle();
    assert!(
        q.needs_clock(),
        "a deferrable timer is pending: no device will announce it"
    );
    assert_eq!(q.cancel_retaining(t), None);
    q.on_idle();
    assert!(!q.needs_clock(), "counted once, and gone with its cancel");
}

#[test]
fn a_kept_value_taken_back_is_no_longer_kept() {
    let mut q = queue();
    let slack = q.prepare(Slack::None);
    let t = q.insert_prepared(1_000, slack, 7);
    assert_eq!(q.cancel_retaining(t), None);
    assert_eq!(q.take_retained(), Some(7));
    assert_eq!(q.take_retained(), None);
    assert_eq!(q.insert_reusing(2_000, slack, |_| true), None);
    assert!(q.drain().is_empty());
}
