//! The hand-over's sleep word on one thread, step by step: who is told to wake the core, what
//! the core sees of its word, what it drains and what closing hands back, with exact counts.
//! (The interleavings of several threads are `loom-tests/`'s.)

use tickless_timer::internal::{Inbox, Op, Wake, Wheel, NO_DEADLINE};
use tickless_timer::{Slack, TimerStats};

fn insert(deadline: u64, value: u32) -> Op<u32> {
    Op::Insert {
        deadline,
        slack: Slack::None,
        value,
    }
}

/// The values of a batch, `Cancel` as `None`, in order.
fn values(ops: &[Op<u32>]) -> Vec<Option<u32>> {
    ops.iter()
        .map(|op| match op {
            Op::Insert { value, .. } | Op::Now(value) => Some(*value),
            Op::Cancel(_) => None,
        })
        .collect()
}

fn wakes(h: &Inbox<u32>) -> (u64, u64) {
    let s = h.stats();
    (s.remote_wakes_sent, s.remote_wakes_avoided)
}

#[test]
fn a_new_inbox_is_running_and_clean() {
    let h = Inbox::<u32>::new();
    assert!(!h.is_dirty());
    assert_eq!(h.sleeping_until(), None);
    let mut out = Vec::new();
    h.drain(&mut out);
    assert!(out.is_empty());
    assert_eq!(h.stats(), TimerStats::default());
}

#[test]
fn the_sleep_word_holds_the_instant_published() {
    let h = Inbox::<u32>::new();
    assert!(h.try_sleep(Some(5_000)));
    assert_eq!(h.sleeping_until(), Some(5_000));
    assert!(!h.is_dirty(), "sleeping does not make the word dirty");
    h.woke();
    assert_eq!(h.sleeping_until(), None);
    assert!(!h.is_dirty());
    // Nothing armed: the largest instant the word holds.
    assert!(h.try_sleep(None));
    assert_eq!(h.sleeping_until(), Some(NO_DEADLINE));
    assert_eq!(NO_DEADLINE, u64::MAX / 2);
    h.woke();
    // Instants past the word's range are clamped to it, 0 to 1 (0 means "running").
    assert!(h.try_sleep(Some(u64::MAX)));
    assert_eq!(h.sleeping_until(), Some(NO_DEADLINE));
    h.woke();
    assert!(h.try_sleep(Some(0)));
    assert_eq!(h.sleeping_until(), Some(1));
}

#[test]
fn sleeping_twice_without_waking_fails() {
    let h = Inbox::<u32>::new();
    assert!(h.try_sleep(Some(5_000)));
    assert!(!h.try_sleep(Some(9_000)), "only from running, clean");
    assert_eq!(h.sleeping_until(), Some(5_000));
}

#[test]
fn pushes_to_a_running_core_never_wake_it() {
    let h = Inbox::new();
    assert_eq!(h.push(Op::Now(1)).unwrap(), Wake::NotNeeded);
    assert_eq!(h.push(insert(0, 2)).unwrap(), Wake::NotNeeded);
    assert_eq!(h.push(insert(u64::MAX, 3)).unwrap(), Wake::NotNeeded);
    assert_eq!(h.notify(0), Wake::NotNeeded);
    assert_eq!(wakes(&h), (0, 4));
    assert!(h.is_dirty());
    assert_eq!(h.sleeping_until(), None);
}

#[test]
fn only_a_deadline_before_the_wake_up_wakes_a_sleeping_core() {
    let h = Inbox::<u32>::new();
    assert!(h.try_sleep(Some(5_000)));
    assert_eq!(h.push(insert(9_000, 1)).unwrap(), Wake::NotNeeded);
    assert_eq!(
        h.push(insert(5_000, 2)).unwrap(),
        Wake::NotNeeded,
        "on time"
    );
    // A handle to cancel: any timer's, the inbox does not look inside.
    let timer = Wheel::new().insert(1, false, ());
    assert_eq!(h.push(Op::Cancel(timer)).unwrap(), Wake::NotNeeded);
    assert_eq!(h.sleeping_until(), Some(5_000), "still asleep");
    assert!(h.is_dirty());
    assert_eq!(h.push(insert(4_999, 3)).unwrap(), Wake::Needed);
    // The first pusher to wake the core lowered the word to running: nobody else wakes it.
    assert_eq!(h.sleeping_until(), None);
    assert_eq!(h.push(Op::Now(4)).unwrap(), Wake::NotNeeded);
    assert_eq!(h.push(insert(1, 5)).unwrap(), Wake::NotNeeded);
    assert_eq!(wakes(&h), (1, 5));
    let mut out = Vec::new();
    h.drain(&mut out);
    assert_eq!(
        values(&out),
        [Some(1), Some(2), None, Some(3), Some(4), Some(5)]
    );
}

#[test]
fn now_wakes_a_core_asleep_with_nothing_armed() {
    let h = Inbox::new();
    assert!(h.try_sleep(None));
    assert_eq!(h.push(insert(NO_DEADLINE, 1)).unwrap(), Wake::NotNeeded);
    assert_eq!(h.notify(u64::MAX), Wake::NotNeeded);
    assert_eq!(h.push(Op::Now(2)).unwrap(), Wake::Needed);
    assert_eq!(wakes(&h), (1, 2));
}

#[test]
fn notify_follows_the_push_rule() {
    let h = Inbox::<u32>::new();
    assert!(h.try_sleep(Some(1_000)));
    assert_eq!(h.notify(2_000), Wake::NotNeeded);
    assert!(h.is_dirty(), "a notification makes the word dirty");
    assert_eq!(h.sleeping_until(), Some(1_000));
    assert_eq!(h.notify(999), Wake::Needed);
    assert_eq!(h.notify(0), Wake::NotNeeded);
    assert_eq!(wakes(&h), (1, 2));
    assert_eq!(
        h.stats(),
        TimerStats {
            remote_wakes_sent: 1,
            remote_wakes_avoided: 2,
            ..TimerStats::default()
        }
    );
}

#[test]
fn drain_takes_everything_in_order_and_cleans_the_word() {
    let h = Inbox::new();
    for i in 0..3 {
        let _ = h.push(insert(1_000 * i, i as u32)).unwrap();
    }
    let _ = h.push(Op::Now(7)).unwrap();
    let mut out = vec![Op::Now(99)];
    h.drain(&mut out);
    assert_eq!(
        values(&out),
        [Some(99), Some(0), Some(1), Some(2), Some(7)],
        "appended"
    );
    assert!(!h.is_dirty());
    // Clean again: the core may sleep.
    assert!(h.try_sleep(Some(10_000)));
    assert_eq!(h.sleeping_until(), Some(10_000));
    out.clear();
    h.drain(&mut out);
    assert!(out.is_empty());
}

#[test]
fn a_push_after_the_drain_stops_the_core_from_sleeping() {
    let h = Inbox::new();
    let _ = h.push(insert(100, 1)).unwrap();
    assert!(!h.try_sleep(Some(5_000)), "dirty: drain first");
    assert_eq!(h.sleeping_until(), None, "nothing published");
    let mut out = Vec::new();
    h.drain(&mut out);
    assert_eq!(values(&out), [Some(1)]);
    assert!(h.try_sleep(Some(5_000)));
    // Pushed while asleep: the core wakes, and must drain before it sleeps again.
    assert_eq!(h.push(insert(200, 2)).unwrap(), Wake::Needed);
    h.woke();
    assert!(h.is_dirty(), "waking keeps DIRTY");
    assert_eq!(h.sleeping_until(), None);
    assert!(!h.try_sleep(Some(5_000)));
    out.clear();
    h.drain(&mut out);
    assert_eq!(values(&out), [Some(2)]);
    assert!(h.try_sleep(Some(5_000)));
}

#[test]
fn waking_by_itself_publishes_running() {
    let h = Inbox::new();
    assert!(h.try_sleep(Some(5_000)));
    // The core's own alarm fired: no pusher woke it.
    h.woke();
    assert_eq!(h.sleeping_until(), None);
    assert!(!h.is_dirty());
    assert_eq!(h.push(insert(1, 1)).unwrap(), Wake::NotNeeded, "running");
    assert_eq!(wakes(&h), (0, 1));
}

#[test]
fn close_hands_back_what_was_left_and_refuses_later_pushes() {
    let h = Inbox::new();
    let _ = h.push(insert(100, 1)).unwrap();
    let mut out = Vec::new();
    h.drain(&mut out);
    let _ = h.push(insert(200, 2)).unwrap();
    let _ = h.push(Op::Now(3)).unwrap();
    let left = h.close();
    assert_eq!(values(&left), [Some(2), Some(3)], "not the drained one");
    match h.push(Op::Now(4)) {
        Err(Op::Now(4)) => {}
        other => panic!("a push after close must hand its op back: {other:?}"),
    }
    assert!(h.close().is_empty(), "idempotent");
    out.clear();
    h.drain(&mut out);
    assert!(out.is_empty());
    // Refused pushes are not counted as wakes either way.
    assert_eq!(wakes(&h), (0, 3));
}

#[test]
fn always_waking_wakes_a_sleeping_core_on_every_push() {
    let h = Inbox::always_waking();
    // A running core is never woken, even so.
    assert_eq!(h.push(insert(u64::MAX, 1)).unwrap(), Wake::NotNeeded);
    let mut out = Vec::new();
    h.drain(&mut out);
    assert!(h.try_sleep(Some(1_000)));
    assert_eq!(
        h.push(insert(9_000, 2)).unwrap(),
        Wake::Needed,
        "later, still woken"
    );
    assert_eq!(
        h.push(insert(9_000, 3)).unwrap(),
        Wake::NotNeeded,
        "already woken"
    );
    assert_eq!(wakes(&h), (1, 2));
    // The rule's inbox leaves the same sleeper alone.
    let lazy = Inbox::new();
    assert!(lazy.try_sleep(Some(1_000)));
    assert_eq!(lazy.push(insert(9_000, 2)).unwrap(), Wake::NotNeeded);
    let default: Inbox<u32> = Inbox::default();
    assert!(default.try_sleep(Some(1_000)));
    assert_eq!(default.notify(9_000), Wake::NotNeeded);
}

#[test]
fn a_conditional_push_is_refused_untouched_when_its_condition_fails_and_a_locked_drain_takes_all() {
    let h = Inbox::<u32>::new();
    // Refused: handed back, nothing pushed, no wake decided, the word untouched.
    match h.push_if(Op::Now(7), || false) {
        Err(Op::Now(7)) => {}
        _ => panic!("refused, and handed back as it came"),
    }
    assert!(!h.is_dirty());
    assert_eq!(wakes(&h), (0, 0));
    // Accepted: as `push`.
    assert_eq!(h.push_if(Op::Now(8), || true).unwrap(), Wake::NotNeeded);
    assert!(h.is_dirty());
    // The locked drain takes it, and what a clean word would have hidden from `drain`.
    let mut out = Vec::new();
    h.drain_locked(&mut out);
    assert_eq!(values(&out), vec![Some(8)]);
    assert!(!h.is_dirty());
    // Closed: refused whatever the condition.
    drop(h.close());
    assert!(h.push_if(Op::Now(9), || true).is_err());
    out.clear();
    h.drain_locked(&mut out);
    assert!(out.is_empty());
}
