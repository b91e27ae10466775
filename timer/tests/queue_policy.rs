//! The re-arm policies against a counting fake device: exact re-programming counts.

use tickless_timer::{Config, FakeDevice, RearmPolicy, Slack, TimerQueue};

const US: u64 = 1_000;

fn queue(policy: RearmPolicy) -> TimerQueue<&'static str, FakeDevice> {
    TimerQueue::new(
        FakeDevice::default(),
        Config {
            policy,
            ..Config::default()
        },
    )
}

/// Timer A at 100 µs is armed; B is added at 2,000 µs; A is restarted at 3,000 µs; the core goes
/// idle. Returns the queue for the caller to inspect.
fn restart_scenario(policy: RearmPolicy) -> TimerQueue<&'static str, FakeDevice> {
    let mut q = queue(policy);
    let a = q.insert(100 * US, Slack::None, "A");
    q.on_idle();
    assert_eq!(q.device().armed, Some(100 * US), "{policy:?}: A armed");
    assert_eq!(q.device().reprograms(), 1);
    q.insert(2_000 * US, Slack::None, "B");
    assert!(q.reset(a, 3_000 * US, Slack::None));
    q.on_idle();
    q
}

#[test]
fn eager_reprograms_at_each_change_of_the_earliest() {
    let q = restart_scenario(RearmPolicy::Eager);
    // Arm A; B does not change the earliest; the restart of A moves it to B: 2 in all, none at idle.
    assert_eq!(q.device().arms, 2);
    assert_eq!(q.device().armed, Some(2_000 * US));
}

#[test]
fn on_idle_reprograms_once_at_idle() {
    let q = restart_scenario(RearmPolicy::OnIdle);
    assert_eq!(q.device().arms, 2, "A at the first idle, B at the second");
    assert_eq!(q.device().armed, Some(2_000 * US));
}

#[test]
fn lazy_keeps_the_stale_arming_and_pays_one_spurious_wakeup() {
    let mut q = restart_scenario(RearmPolicy::Lazy);
    assert_eq!(
        q.device().reprograms(),
        1,
        "not re-programmed after A's arming"
    );
    assert_eq!(q.device().armed, Some(100 * US));
    // The stale arming fires at 100 µs with nothing due.
    assert!(!q.device_fired(100 * US));
    assert_eq!(q.stats().spurious, 1);
    assert_eq!(q.on_idle(), Some(2_000 * US));
    assert_eq!(q.device().reprograms(), 2);
    assert!(q.device_fired(2_000 * US));
    assert_eq!(q.pop_expired().map(|(_, v)| v), Some("B"));
    assert_eq!(q.stats().spurious, 1);
}

/// 100,000 rounds of {insert a timeout at now + 1 s; go idle; cancel it}, the clock moving
/// 20 µs a round (2 s in all). Returns (re-programmings, spurious wakeups).
fn timeout_rounds(policy: RearmPolicy) -> (u64, u64) {
    let mut q = queue(policy);
    let mut now = 0;
    for _ in 0..100_000 {
        now += 20 * US;
        if q.armed().is_some_and(|a| a <= now) {
            q.device_fired(now);
        }
        q.advance(now);
        assert!(q.pop_expired().is_none(), "no timeout ever fires");
        let t = q.insert(now + 1_000_000 * US, Slack::None, "timeout");
        q.on_idle();
        q.cancel(t).expect("pending");
    }
    let s = q.stats();
    assert_eq!((s.inserts, s.cancels, s.fires), (100_000, 100_000, 0));
    assert_eq!(s.rearms, q.device().reprograms());
    (s.rearms, s.spurious)
}

#[test]
fn per_message_timeouts_eager() {
    // Armed on each insert, disarmed on each cancel.
    assert_eq!(timeout_rounds(RearmPolicy::Eager), (200_000, 0));
}

#[test]
fn per_message_timeouts_on_idle() {
    // Each idle transition finds a new earliest deadline, one round later than the armed one.
    assert_eq!(timeout_rounds(RearmPolicy::OnIdle), (100_000, 0));
}

#[test]
fn per_message_timeouts_lazy() {
    // Armed once; the stale arming fires once after 1 s, spuriously, and is replaced.
    assert_eq!(timeout_rounds(RearmPolicy::Lazy), (2, 1));
}

#[test]
fn deferrable_timers_never_arm() {
    for policy in [RearmPolicy::Eager, RearmPolicy::OnIdle, RearmPolicy::Lazy] {
        let mut q = queue(policy);
        q.insert(50 * US, Slack::Unbounded, "deferred");
        assert_eq!(q.on_idle(), None);
        assert_eq!(q.device().reprograms(), 0);
        // It fires at the first wakeup after its deadline, whatever caused it.
        q.insert(80 * US, Slack::None, "armed");
        assert_eq!(q.on_idle(), Some(80 * US));
        q.device_fired(80 * US);
        let fired: Vec<_> = std::iter::from_fn(|| q.pop_expired().map(|(_, v)| v)).collect();
        assert_eq!(fired, ["deferred", "armed"]);
    }
}

#[test]
fn slack_puts_many_deadlines_on_one_wakeup() {
    let mut q = queue(RearmPolicy::OnIdle);
    let slack = Slack::Bounded(std::time::Duration::from_millis(1));
    // 100 deadlines spread over 400 µs: the device is armed for the first one's latest
    // instant, by which every one of them is due.
    for i in 0..100 {
        q.insert(1_030 * US + i * 4 * US, slack, "t");
    }
    let armed = q.on_idle().unwrap();
    assert_eq!(armed, 2_030 * US);
    assert!(q.device_fired(armed));
    assert_eq!(std::iter::from_fn(|| q.pop_expired()).count(), 100);
    assert_eq!(q.device().reprograms(), 1);
}

#[test]
fn windows_are_stabbed_at_their_latest_instant_not_on_a_grid() {
    // Deadlines from 1.9 ms to 2.8 ms with 1 ms of slack: a 1 ms grid would need two wakeups
    // (2 ms and 3 ms); the first window's end, 2.9 ms, is in every window.
    let mut q = queue(RearmPolicy::OnIdle);
    let slack = Slack::Bounded(std::time::Duration::from_millis(1));
    const NAMES: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
    for (i, name) in (0..).zip(NAMES) {
        q.insert(1_900 * US + i * 100 * US, slack, name);
    }
    assert_eq!(q.on_idle(), Some(2_900 * US));
    assert!(q.device_fired(2_900 * US));
    let fired: Vec<_> = std::iter::from_fn(|| q.pop_expired())
        .map(|(_, v)| v)
        .collect();
    assert_eq!(fired, NAMES, "all, in deadline order");
    assert_eq!(q.on_idle(), None, "nothing left: one wakeup for all ten");
}

#[test]
fn each_slack_bounds_its_own_timers() {
    // An exact timer inside a slack timer's window decides the wakeup, and takes the slack
    // timer along; a later exact one is not taken early.
    let mut q = queue(RearmPolicy::OnIdle);
    let ms = Slack::Bounded(std::time::Duration::from_millis(1));
    q.insert(1_000 * US, ms, "lenient");
    q.insert(1_400 * US, Slack::None, "exact");
    q.insert(1_600 * US, Slack::None, "later");
    q.insert(
        1_500 * US,
        Slack::Bounded(std::time::Duration::from_micros(50)),
        "tight",
    );
    assert_eq!(q.on_idle(), Some(1_400 * US));
    assert!(q.device_fired(1_400 * US));
    let fired: Vec<_> = std::iter::from_fn(|| q.pop_expired())
        .map(|(_, v)| v)
        .collect();
    assert_eq!(fired, ["lenient", "exact"]);
    assert_eq!(q.on_idle(), Some(1_550 * US), "tight's latest instant");
    assert!(q.device_fired(1_550 * US));
    let fired: Vec<_> = std::iter::from_fn(|| q.pop_expired())
        .map(|(_, v)| v)
        .collect();
    assert_eq!(fired, ["tight"]);
    assert_eq!(q.on_idle(), Some(1_600 * US));
}

#[test]
fn needs_clock_only_for_what_the_device_does_not_announce() {
    for policy in [RearmPolicy::Eager, RearmPolicy::OnIdle, RearmPolicy::Lazy] {
        let mut q = queue(policy);
        assert!(!q.needs_clock());
        q.insert(500 * US, Slack::None, "a");
        // Eager armed the device at once; the others will at idle.
        assert_eq!(q.needs_clock(), policy != RearmPolicy::Eager, "{policy:?}");
        q.on_idle();
        assert!(!q.needs_clock(), "{policy:?}: the device announces a");
        q.insert(900 * US, Slack::None, "later");
        assert!(!q.needs_clock(), "{policy:?}: a fires first anyway");
        q.insert(100 * US, Slack::None, "earlier");
        assert_eq!(q.needs_clock(), policy != RearmPolicy::Eager, "{policy:?}");
        q.on_idle();
        assert!(!q.needs_clock());
        assert!(!q.has_expired());
        q.device_fired(100 * US);
        assert!(
            q.needs_clock(),
            "{policy:?}: the arming is spent; a and later are announced by nothing"
        );
        assert!(q.has_expired(), "{policy:?}: due timers to pop");
        q.on_idle();
        assert!(!q.needs_clock(), "{policy:?}: armed for a again");
        q.insert(50 * US, Slack::Unbounded, "deferrable");
        assert!(
            q.needs_clock(),
            "{policy:?}: deferrable timers never arm the device"
        );
    }
}

#[test]
fn a_stale_device_signal_changes_nothing() {
    for policy in [RearmPolicy::Eager, RearmPolicy::OnIdle, RearmPolicy::Lazy] {
        let mut q = queue(policy);
        // Disarmed: a signal is stale.
        assert!(!q.device_fired(10 * US));
        q.insert(500 * US, Slack::None, "a");
        assert_eq!(q.on_idle(), Some(500 * US));
        // A signal read before the armed deadline (the device was re-armed later after it
        // fired): the arming stands, nothing is counted, nothing is due.
        assert!(!q.device_fired(499 * US), "{policy:?}");
        assert_eq!(q.armed(), Some(500 * US), "{policy:?}");
        assert_eq!(q.stats().spurious, 0, "{policy:?}");
        assert!(!q.has_expired());
        assert!(q.device_fired(500 * US), "{policy:?}");
        assert_eq!(q.armed(), None);
        assert_eq!(q.pop_expired().map(|(_, v)| v), Some("a"));
    }
}

#[test]
fn drain_takes_every_timer_and_counts_nothing() {
    let mut q = queue(RearmPolicy::Lazy);
    q.insert(3 * US, Slack::None, "c");
    q.insert(US, Slack::None, "a");
    q.insert(u64::MAX, Slack::Unbounded, "never");
    q.insert(2 * US, Slack::None, "b");
    assert_eq!(q.drain(), ["a", "b", "c", "never"]);
    assert!(q.is_empty());
    let s = q.stats();
    assert_eq!((s.inserts, s.fires, s.cancels), (4, 0, 0));
    // Still usable afterwards.
    q.insert(5 * US, Slack::None, "d");
    q.advance(5 * US);
    assert_eq!(q.pop_expired().map(|(_, v)| v), Some("d"));
}

#[test]
fn a_lost_device_is_programmed_afresh_at_the_next_idle() {
    for policy in [RearmPolicy::Eager, RearmPolicy::OnIdle, RearmPolicy::Lazy] {
        let mut q = queue(policy);
        q.insert(500 * US, Slack::None, "a");
        assert_eq!(q.on_idle(), Some(500 * US));
        let before = q.device().reprograms();
        q.device_lost();
        assert_eq!(q.armed(), None, "{policy:?}");
        assert!(q.needs_clock(), "{policy:?}: only the clock can tell now");
        assert_eq!(q.on_idle(), Some(500 * US), "{policy:?}");
        assert_eq!(
            q.device().reprograms(),
            before + 1,
            "{policy:?}: armed again, once"
        );
    }
}

#[test]
fn timeouts_cancelled_before_the_device_fires_never_enter_the_wheel() {
    // A request's timeout: each message inserts a 1 s timer with 1 ms of slack and cancels it
    // before the next. Once the device is armed (for the first), every later one ends its
    // window after the armed instant, so it waits outside the wheel and its cancel is free:
    // no re-arm under any policy, and the device still fires no later than any window's end.
    let policies = [RearmPolicy::Eager, RearmPolicy::OnIdle, RearmPolicy::Lazy];
    let ms = Slack::Bounded(std::time::Duration::from_millis(1));
    // Exact ones too: their window is their deadline, still after the armed instant.
    for (policy, slack) in policies
        .into_iter()
        .flat_map(|p| [(p, ms), (p, Slack::None)])
    {
        let mut q = queue(policy);
        let first = q.insert(1_000_000 * US, slack, "first");
        q.on_idle();
        let armed = q.armed().unwrap();
        let rearms = q.device().reprograms();
        for i in 1..=1_000 {
            let t = q.insert(1_000_000 * US + i * 10 * US, slack, "message");
            assert!(q.on_idle().is_some_and(|a| a <= armed), "{policy:?}");
            assert_eq!(q.cancel(t), Some("message"));
        }
        let s = q.stats();
        assert_eq!(
            (s.cancels, s.cancels_detached),
            (1_000, 1_000),
            "{policy:?}"
        );
        assert_eq!(q.device().reprograms(), rearms, "{policy:?}: no re-arm");
        // The detached ones that survive are placed before anything expires.
        let late = q.insert(1_000_500 * US, slack, "survivor");
        assert_eq!(q.cancel(first), Some("first"));
        q.on_idle();
        assert!(q.armed().is_some_and(|a| a <= 1_001_500 * US), "{policy:?}");
        q.advance(1_000_500 * US);
        assert_eq!(q.pop_expired(), Some((late, "survivor")), "{policy:?}");
    }
}

#[test]
fn up_to_64_pending_timers_wait_detached_and_more_are_placed() {
    let mut q = queue(RearmPolicy::Lazy);
    let ms = Slack::Bounded(std::time::Duration::from_millis(1));
    q.insert(1_000 * US, Slack::None, "armed");
    q.on_idle();
    // 63 pending at once: all detached, all cancelled as such.
    let batch: Vec<_> = (0..63)
        .map(|i| q.insert(5_000 * US + i * US, ms, "t"))
        .collect();
    for h in batch {
        q.cancel(h);
    }
    assert_eq!(q.stats().cancels_detached, 63);
    // 64 stale handles and 40 pending: the full list is compacted to the 40, which stay.
    let batch: Vec<_> = (0..40)
        .map(|i| q.insert(6_000 * US + i * US, ms, "t"))
        .collect();
    for h in batch {
        q.cancel(h);
    }
    assert_eq!(q.stats().cancels_detached, 103);
    // 80 pending: past half the list, they are placed in the wheel.
    let batch: Vec<_> = (0..80)
        .map(|i| q.insert(7_000 * US + i * US, ms, "t"))
        .collect();
    for h in batch {
        q.cancel(h);
    }
    let placed = 80 - (q.stats().cancels_detached - 103);
    assert!(placed > 0 && placed < 80, "{placed} of 80 placed");
}

#[test]
fn a_compaction_keeps_every_pending_detached_timer_wherever_it_is_in_the_list() {
    // Compactions look for the pending timers from the latest back and stop once they have
    // found as many as may be pending: pending ones early in the list, among stale ones, and
    // ones a reset placed in the wheel (still counted) must all survive, and fire.
    let mut q: TimerQueue<u64, FakeDevice> =
        TimerQueue::new(FakeDevice::default(), Config::default());
    let ms = Slack::Bounded(std::time::Duration::from_millis(1));
    q.insert(1_000 * US, Slack::None, 0);
    q.on_idle();
    let mut kept = Vec::new();
    for i in 1..=1_000u64 {
        let h = q.insert(5_000 * US + i * US, ms, i);
        match i % 97 {
            // Kept pending, early in some list.
            3 => kept.push(i),
            // Placed in the wheel by a reset, pending too.
            5 => {
                assert!(q.reset(h, 6_000 * US + i * US, ms));
                kept.push(i);
            }
            _ => assert_eq!(q.cancel(h), Some(i)),
        }
    }
    assert!(
        q.stats().cancels_detached > 900,
        "most were detached: {:?}",
        q.stats()
    );
    q.advance(10_000 * US);
    let mut fired: Vec<u64> = std::iter::from_fn(|| q.pop_expired().map(|(_, v)| v)).collect();
    fired.sort_unstable();
    kept.insert(0, 0);
    assert_eq!(fired, kept);
}
