//! Exact re-programming counts at the edges of the re-arm rules (a new earliest deadline equal
//! to the armed one, nothing left to arm), and the queue's accessors.

use std::time::Duration;

use tickless_timer::{Config, FakeDevice, RearmPolicy, Slack, TimerQueue};

const US: u64 = 1_000;

const POLICIES: [RearmPolicy; 3] = [RearmPolicy::Eager, RearmPolicy::OnIdle, RearmPolicy::Lazy];

fn queue(policy: RearmPolicy) -> TimerQueue<u32, FakeDevice> {
    TimerQueue::new(
        FakeDevice::default(),
        Config {
            policy,
            ..Config::default()
        },
    )
}

#[test]
fn an_earliest_deadline_equal_to_the_armed_one_is_not_reprogrammed() {
    for policy in POLICIES {
        let mut q = queue(policy);
        let a = q.insert(100 * US, Slack::None, 1);
        assert_eq!(q.on_idle(), Some(100 * US));
        assert_eq!(q.device().reprograms(), 1, "{policy:?}");
        // Restarted at the deadline it had: marks the queue, moves nothing.
        assert!(q.reset(a, 100 * US, Slack::None));
        assert_eq!(q.on_idle(), Some(100 * US), "{policy:?}");
        assert_eq!(
            q.device().reprograms(),
            1,
            "{policy:?}: same deadline, no re-arm"
        );
        // Another timer on the armed deadline: the device fires for it anyway.
        q.insert(100 * US, Slack::None, 2);
        assert_eq!(q.on_idle(), Some(100 * US), "{policy:?}");
        assert_eq!(q.device().reprograms(), 1, "{policy:?}");
        assert_eq!(q.stats().rearms, 1, "{policy:?}");
    }
}

#[test]
fn an_earlier_timer_cancelled_before_idle_leaves_the_arming_alone() {
    for policy in [RearmPolicy::OnIdle, RearmPolicy::Lazy] {
        let mut q = queue(policy);
        q.insert(100 * US, Slack::None, 1);
        q.on_idle();
        let b = q.insert(50 * US, Slack::None, 2);
        assert!(q.needs_clock(), "{policy:?}: b is not armed yet");
        assert_eq!(q.cancel(b), Some(2));
        // The earliest is the armed one again.
        assert_eq!(q.on_idle(), Some(100 * US), "{policy:?}");
        assert_eq!(q.device().reprograms(), 1, "{policy:?}");
        assert!(!q.needs_clock(), "{policy:?}");
    }
}

#[test]
fn lazy_rearms_only_for_an_earlier_deadline() {
    let mut q = queue(RearmPolicy::Lazy);
    let a = q.insert(100 * US, Slack::None, 1);
    q.on_idle();
    // Later: not re-armed (the stale arming fires once instead).
    assert!(q.reset(a, 300 * US, Slack::None));
    assert_eq!(q.on_idle(), Some(100 * US));
    assert_eq!(q.device().reprograms(), 1);
    // Earlier than the armed one: re-armed once.
    q.insert(99 * US, Slack::None, 2);
    assert_eq!(q.on_idle(), Some(99 * US));
    assert_eq!((q.device().arms, q.device().disarms), (2, 0));
    assert_eq!(q.device().armed, Some(99 * US));
    // Nothing pending any more: Lazy never disarms.
    q.advance(300 * US);
    assert_eq!(std::iter::from_fn(|| q.pop_expired()).count(), 2);
    assert!(q.is_empty());
    assert_eq!(q.on_idle(), Some(99 * US));
    assert_eq!(q.device().reprograms(), 2);
}

#[test]
fn after_the_device_fires_an_empty_queue_is_not_rearmed_by_lazy() {
    let mut q = queue(RearmPolicy::Lazy);
    q.insert(100 * US, Slack::None, 1);
    q.on_idle();
    assert!(q.device_fired(100 * US));
    assert_eq!(q.pop_expired().map(|(_, v)| v), Some(1));
    assert_eq!(q.armed(), None);
    // Nothing to arm, nothing armed: no call to the device at all.
    assert_eq!(q.on_idle(), None);
    assert_eq!(q.device().reprograms(), 1);
    // The next timer arms a disarmed device.
    q.insert(500 * US, Slack::None, 2);
    assert_eq!(q.on_idle(), Some(500 * US));
    assert_eq!(q.device().reprograms(), 2);
}

#[test]
fn on_idle_and_eager_disarm_when_the_last_timer_goes() {
    for policy in [RearmPolicy::Eager, RearmPolicy::OnIdle] {
        let mut q = queue(policy);
        let a = q.insert(100 * US, Slack::None, 1);
        q.on_idle();
        q.cancel(a);
        assert_eq!(q.on_idle(), None, "{policy:?}");
        assert_eq!((q.device().arms, q.device().disarms), (1, 1), "{policy:?}");
        assert_eq!(q.device().armed, None);
        assert_eq!(q.stats().rearms, 2);
    }
}

#[test]
fn accessors_say_what_the_queue_holds() {
    let config = Config {
        policy: RearmPolicy::Eager,
        resolution: Duration::from_micros(3),
        ..Config::default()
    };
    let mut q = TimerQueue::new(FakeDevice::default(), config);
    assert_eq!(q.policy(), RearmPolicy::Eager);
    assert_eq!(q.resolution_ns(), 3_000);
    assert!(q.is_empty());
    assert_eq!(q.len(), 0);
    assert_eq!(q.next_expiration(), None);
    let a = q.insert(10_000, Slack::None, 1);
    let b = q.insert(20_000, Slack::None, 2);
    q.insert(1, Slack::Unbounded, 3);
    assert!(!q.is_empty());
    assert_eq!(q.len(), 3);
    // Rounded up to the 3 µs resolution; the deferrable one does not count.
    assert_eq!(q.next_expiration(), Some(12_000));
    assert_eq!(q.armed(), Some(12_000));
    *q.get_mut(b).unwrap() = 20;
    q.cancel(a);
    assert_eq!(q.get_mut(a), None);
    assert_eq!(q.len(), 2);
    q.device_mut().arms = 100;
    assert_eq!(q.device().arms, 100);
    q.advance(21_000);
    let fired: Vec<_> = std::iter::from_fn(|| q.pop_expired().map(|(_, v)| v)).collect();
    assert_eq!(fired, [3, 20], "the value as updated");
    assert!(q.is_empty());
    assert_eq!(
        (q.stats().inserts, q.stats().cancels, q.stats().fires),
        (3, 1, 2)
    );
    assert_eq!(queue(RearmPolicy::OnIdle).policy(), RearmPolicy::OnIdle);
    assert_eq!(
        queue(RearmPolicy::Lazy).resolution_ns(),
        1_000,
        "default 1 µs"
    );
}
