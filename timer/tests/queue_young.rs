//! Young timers (`TimerQueue::insert_young`): made at random instants within long turns, some
//! cancelled or reset before their turn ends, the rest settled by one reading at the turn's
//! end: none fires before its creation plus its span, none later than that reading plus its
//! span, its slack and the resolution, and one cancelled while young costs no insert.

use std::collections::HashMap;
use std::time::Duration;

use proptest::prelude::*;
use tickless_timer::{Config, FakeDevice, RearmPolicy, Slack, TimerHandle, TimerQueue};

/// One timer made within a turn.
#[derive(Debug, Clone)]
struct Make {
    /// Nanoseconds the turn ran before it was made.
    after: u64,
    /// How long it was made for.
    span: u64,
    /// Its slack.
    slack_ns: u64,
    /// Cancelled before the turn ends.
    cancel: bool,
    /// Reset to a deadline of its own (creation plus this) before the turn ends.
    reset: Option<u64>,
}

fn make() -> impl Strategy<Value = Make> {
    (
        prop_oneof![0u64..1_000, 0u64..2_000_000],
        prop_oneof![0u64..1_000, 0u64..200_000, 0u64..100_000_000],
        prop_oneof![Just(0u64), 0u64..1_000_000],
        prop::bool::weighted(0.3),
        prop::option::weighted(0.1, 0u64..1_000_000),
    )
        .prop_map(|(after, span, slack_ns, cancel, reset)| Make {
            after,
            span,
            slack_ns,
            cancel,
            reset,
        })
}

/// A turn: its timers, and how long after the last one its end's reading is taken.
fn turn() -> impl Strategy<Value = (Vec<Make>, u64)> {
    (
        prop::collection::vec(make(), 0..12),
        prop_oneof![Just(0u64), 0u64..1_000, 0u64..500_000],
    )
}

/// A timer as the model keeps it.
#[derive(Debug, Clone, Copy)]
struct Model {
    /// Never before.
    earliest: u64,
    /// Never after.
    latest: u64,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn young_timers_fire_never_before_creation_plus_span(
        turns in prop::collection::vec(turn(), 1..8),
        step in prop_oneof![1u64..300, 1u64..100_000, 1u64..10_000_000],
        resolution_ns in prop_oneof![Just(1u64), Just(1_000u64), 1u64..100_000],
        policy in prop_oneof![Just(RearmPolicy::Lazy), Just(RearmPolicy::OnIdle), Just(RearmPolicy::Eager)],
    ) {
        let config = Config {
            policy,
            resolution: Duration::from_nanos(resolution_ns),
            ..Config::default()
        };
        let mut q = TimerQueue::new(FakeDevice::default(), config);
        let mut live: HashMap<TimerHandle, Model> = HashMap::new();
        let mut now = 0u64;
        let mut kept = 0u64;
        for (makes, tail) in turns {
            let inserts = q.stats().inserts;
            let mut young = Vec::new();
            let mut reset = 0;
            for m in &makes {
                now += m.after;
                let slack = q.prepare(Slack::Bounded(Duration::from_nanos(m.slack_ns)));
                let h = q.insert_young(m.span, slack, now);
                if m.cancel {
                    prop_assert_eq!(q.cancel(h), Some(now));
                    continue;
                }
                if let Some(at) = m.reset {
                    // A deadline of its own: as any timer's.
                    prop_assert!(q.reset(h, now + at, Slack::None));
                    live.insert(h, Model { earliest: now + at, latest: now + at + resolution_ns });
                    reset += 1;
                    continue;
                }
                young.push((h, now, m.span, m.slack_ns));
            }
            now += tail;
            // The turn's one reading.
            q.settle(now);
            prop_assert!(!q.has_young());
            for &(h, made, span, slack_ns) in &young {
                live.insert(h, Model {
                    earliest: made + span,
                    latest: now + span + slack_ns + resolution_ns,
                });
            }
            kept += (young.len() + reset) as u64;
            prop_assert_eq!(q.stats().inserts - inserts, (young.len() + reset) as u64,
                "cancelled young timers are never inserted");
            // Time runs to the next turn: a few advances of `step`, each firing what is due.
            for _ in 0..8 {
                now += step;
                q.advance(now);
                while let Some((h, made)) = q.pop_expired() {
                    let m = live.remove(&h).expect("a live timer fires once");
                    prop_assert!(now >= m.earliest, "early: made at {made}, fired at {now}, {m:?}");
                }
                for m in live.values() {
                    prop_assert!(now < m.latest, "late: at {now}, {m:?}");
                }
                q.on_idle();
            }
        }
        prop_assert_eq!(q.len(), live.len());
        prop_assert_eq!(q.stats().inserts, kept);
    }
}

#[test]
fn a_young_timer_is_pending_and_cancellable_but_not_in_the_wheel() {
    let mut q = TimerQueue::new(FakeDevice::default(), Config::default());
    let slack = q.prepare(Slack::None);
    let a = q.insert_young(5_000, slack, "a");
    assert!(q.contains(a) && q.has_young());
    assert_eq!(
        (q.len(), q.next_expiration(), q.deadline_of(a)),
        (1, None, None)
    );
    *q.get_mut(a).unwrap() = "a2";
    q.on_idle();
    assert_eq!(
        q.device().armed,
        None,
        "nothing to arm for until it settles"
    );
    q.settle(10_000);
    assert_eq!(q.deadline_of(a), Some(15_000));
    assert_eq!(q.next_expiration(), Some(15_000));
    q.advance(14_999);
    assert!(q.pop_expired().is_none(), "never early");
    q.advance(15_000);
    assert_eq!(q.pop_expired(), Some((a, "a2")));
    // Cancelled young: no insert, no cancel counted, no list touched.
    let b = q.insert_young(5_000, slack, "b");
    assert_eq!(q.cancel(b), Some("b"));
    assert!(!q.has_young());
    let s = q.stats();
    assert_eq!((s.inserts, s.cancels), (1, 0));
}

#[test]
fn young_timers_settle_at_an_advance_and_are_drained() {
    let mut q = TimerQueue::new(FakeDevice::default(), Config::default());
    let slack = q.prepare(Slack::None);
    q.insert_young(0, slack, "zero");
    q.insert_young(1_000, slack, "later");
    q.advance(7_000); // a reading: they settle by it, the zero one due at once
    assert_eq!(q.pop_expired().map(|(_, v)| v), Some("zero"));
    assert!(q.pop_expired().is_none());
    q.insert_young(3_000, slack, "young");
    let mut drained = q.drain();
    drained.sort();
    assert_eq!(drained, vec!["later", "young"]);
    assert!(q.is_empty());
}

#[test]
fn stale_young_handles_are_forgotten_and_a_settled_timer_reuses_a_kept_value() {
    let mut q = TimerQueue::new(FakeDevice::default(), Config::default());
    let slack = q.prepare(Slack::None);
    // Many made and dropped in one turn: the list of young handles stays small.
    for i in 0..10_000u32 {
        let h = q.insert_young(1_000, slack, i);
        q.cancel(h);
    }
    let keep = q.insert_young(1_000, slack, 7);
    assert_eq!(q.cancel_retaining(keep), None);
    let again = q
        .insert_young_reusing(2_000, slack, |&v| v == 7)
        .expect("the kept value");
    q.settle(1);
    assert_eq!(
        q.deadline_of(again),
        Some(3_000),
        "2,001 ns, rounded up to the 1 µs tick"
    );
    assert_eq!(q.stats().inserts, 1);
}
