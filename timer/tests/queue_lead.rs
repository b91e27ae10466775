//! The wakeup lead against a counting fake device and a manual clock: what it learns, where it
//! programs the device, and that an expiry it brings ahead of a timer fires nothing early.

use std::time::Duration;

use tickless_timer::{Config, FakeDevice, RearmPolicy, Slack, TimerQueue};

const US: u64 = 1_000;

fn queue(lead_max_us: u64) -> TimerQueue<&'static str, FakeDevice> {
    TimerQueue::new(
        FakeDevice::default(),
        Config {
            lead_max: Duration::from_micros(lead_max_us),
            ..Config::default()
        },
    )
}

/// Three exact timers, each woken `late_us` after the device's instant: the lead's first
/// lesson. Returns the clock.
fn teach(q: &mut TimerQueue<&'static str, FakeDevice>, late_us: u64) -> u64 {
    let mut now = 0;
    for _ in 0..3 {
        q.insert(now + 1_000 * US, Slack::None, "lesson");
        let programmed = q.on_idle().expect("armed");
        now = programmed + late_us * US;
        assert!(q.device_woke(now), "the lesson's timer is due");
        assert_eq!(q.pop_expired().map(|(_, v)| v), Some("lesson"));
    }
    now
}

#[test]
fn the_device_is_programmed_ahead_by_the_latency_it_learned() {
    let mut q = queue(100);
    assert_eq!(q.lead(), 0, "nothing learned yet");
    let now = teach(&mut q, 40);
    assert_eq!(q.lead(), 40 * US);
    // A timer with a wide window: the device fires 40 µs before its end, inside it.
    q.insert(
        now + 10_000 * US,
        Slack::Bounded(Duration::from_micros(500)),
        "wide",
    );
    assert_eq!(q.on_idle(), Some(now + 10_460 * US));
    assert_eq!(
        q.armed(),
        Some(now + 10_500 * US),
        "armed for the window's end"
    );
    assert_eq!(q.device().armed, Some(now + 10_460 * US));
    // It comes 30 µs late: inside the window, the timer is due, nothing waits.
    assert!(q.device_woke(now + 10_490 * US));
    assert_eq!(q.pop_expired().map(|(_, v)| v), Some("wide"));
    assert_eq!(q.take_early(), None);
    assert_eq!((q.stats().early, q.stats().spurious), (0, 0));
}

#[test]
fn an_early_expiry_fires_nothing_and_says_so_once() {
    let mut q = queue(100);
    let now = teach(&mut q, 40);
    let deadline = now + 5_000 * US;
    q.insert(deadline, Slack::None, "exact");
    assert_eq!(q.on_idle(), Some(deadline - 40 * US));
    // The wakeup takes only 10 µs this time: 30 µs before the deadline.
    assert!(!q.device_woke(deadline - 30 * US), "nothing fires early");
    assert!(q.pop_expired().is_none());
    assert_eq!(
        (q.stats().early, q.stats().spurious),
        (1, 0),
        "early, not spurious"
    );
    assert_eq!(
        q.take_early(),
        Some(40 * US),
        "the lead it was programmed with"
    );
    assert_eq!(q.take_early(), None, "taken");
    // The arming is spent; the driver waits out the rest (the timer is the next expiration,
    // within the lead) and advances to it.
    assert_eq!(q.armed(), None);
    assert_eq!(q.next_expiration(), Some(deadline));
    q.advance(deadline - 1);
    assert!(
        q.pop_expired().is_none(),
        "still nothing a nanosecond before"
    );
    q.advance(deadline);
    assert_eq!(q.pop_expired().map(|(_, v)| v), Some("exact"));
    // That short wakeup taught the lead a step down.
    assert!(q.lead() < 40 * US);
}

#[test]
fn a_signal_before_the_programmed_instant_is_stale_and_teaches_nothing() {
    let mut q = queue(100);
    let now = teach(&mut q, 40);
    let lead = q.lead();
    q.insert(now + 5_000 * US, Slack::None, "later");
    let programmed = q.on_idle().expect("armed");
    assert!(!q.device_woke(programmed - 1));
    assert_eq!(q.programmed(), Some(programmed), "still armed");
    assert_eq!(q.lead(), lead, "nothing learned");
    assert_eq!((q.stats().early, q.stats().spurious), (0, 0));
}

#[test]
fn the_lead_is_capped_and_device_fired_teaches_nothing() {
    let mut q = queue(25);
    let now = teach(&mut q, 40);
    assert_eq!(q.lead(), 25 * US, "capped");
    q.insert(now + 1_000 * US, Slack::None, "t");
    let programmed = q.on_idle().expect("armed");
    assert_eq!(q.armed(), Some(programmed + 25 * US));
    // Found by a core that was busy, long after: no lesson.
    assert!(q.device_fired(programmed + 900 * US));
    q.insert(now + 2_000 * US, Slack::None, "u");
    let programmed = q.on_idle().expect("armed");
    assert_eq!(q.armed(), Some(programmed + 25 * US), "the same lead");
    // While a lesson from a short wakeup takes it down a step.
    q.device_woke(programmed + US);
    assert!(q.lead() < 25 * US);
}

#[test]
fn no_lead_without_a_cap_or_while_leading_is_off() {
    let mut q = queue(0);
    let now = teach(&mut q, 40);
    assert_eq!(q.lead(), 0);
    q.insert(now + 1_000 * US, Slack::None, "t");
    assert_eq!(q.on_idle(), Some(now + 1_000 * US));

    let mut q = queue(100);
    let now = teach(&mut q, 40);
    q.set_leading(false);
    q.insert(now + 1_000 * US, Slack::None, "t");
    assert_eq!(
        q.on_idle(),
        Some(now + 1_000 * US),
        "programmed for the instant itself"
    );
    assert_eq!(q.lead(), 40 * US, "still known");
    q.set_leading(true);
    q.device_lost();
    assert_eq!(q.on_idle(), Some(now + 960 * US));
}

#[test]
fn every_policy_programs_with_the_lead() {
    for policy in [RearmPolicy::Eager, RearmPolicy::OnIdle, RearmPolicy::Lazy] {
        let mut q = TimerQueue::new(
            FakeDevice::default(),
            Config {
                policy,
                lead_max: Duration::from_micros(100),
                ..Config::default()
            },
        );
        let now = teach(&mut q, 40);
        q.insert(now + 2_000 * US, Slack::None, "t");
        q.on_idle();
        assert_eq!(q.device().armed, Some(now + 1_960 * US), "{policy:?}");
    }
}

#[test]
fn an_early_expiry_whose_timer_comes_due_leaves_nothing_to_wait_out() {
    let mut q = queue(100);
    let now = teach(&mut q, 40);
    let deadline = now + 5_000 * US;
    q.insert(deadline, Slack::None, "exact");
    q.on_idle();
    assert!(!q.device_woke(deadline - 30 * US));
    // The loop reads the clock again before it goes idle, and the timer is due by then.
    q.advance(deadline + US);
    assert_eq!(q.pop_expired().map(|(_, v)| v), Some("exact"));
    assert_eq!(q.take_early(), None);
    assert_eq!(q.stats().early, 1);
}

#[test]
fn an_expiry_with_no_timer_left_to_wait_for_is_spurious_before_or_after_the_armed_instant() {
    for ahead in [true, false] {
        let mut q = queue(100);
        let now = teach(&mut q, 40);
        let t = q.insert(now + 5_000 * US, Slack::None, "cancelled");
        q.insert(now + 900_000 * US, Slack::None, "far");
        let programmed = q.on_idle().expect("armed");
        q.cancel(t).expect("pending");
        // Lazy keeps the arming; it fires, ahead of the armed instant or after it, with
        // nothing due and nothing needing the core until the far timer: nothing to wait out.
        let at = if ahead {
            programmed + 10 * US
        } else {
            now + 5_010 * US
        };
        assert!(!q.device_woke(at), "ahead {ahead}");
        assert_eq!(
            (q.stats().early, q.stats().spurious),
            (0, 1),
            "ahead {ahead}"
        );
        assert_eq!(q.take_early(), None, "ahead {ahead}");
    }
}

#[test]
fn next_deadline_is_the_first_deadline_not_the_end_of_its_window() {
    let mut q = queue(100);
    assert_eq!(q.next_deadline(), None);
    q.insert(
        7_000 * US,
        Slack::Bounded(Duration::from_micros(500)),
        "wide",
    );
    q.insert(7_200 * US, Slack::None, "exact");
    assert_eq!(q.next_deadline(), Some(7_000 * US));
    assert_eq!(q.next_expiration(), Some(7_200 * US));
    q.advance(7_000 * US);
    assert_eq!(q.pop_expired().map(|(_, v)| v), Some("wide"));
    assert_eq!(q.next_deadline(), Some(7_200 * US));
}

/// Another thread programmed the device for a timer it handed over, the lead ahead of its
/// deadline (the inbox's remote arming), and it fired: the queue forgets its own arming and
/// takes the expiry as early, with the lead it has learned, so that the driver, once it has
/// taken the handed timer, waits the rest out awake instead of arming for an instant already
/// past and waking again.
#[test]
fn a_remote_arming_that_fires_is_early_by_the_learned_lead() {
    let mut q = queue(100);
    let now = teach(&mut q, 40);
    q.insert(now + 60_000 * US, Slack::None, "far");
    q.on_idle().expect("armed for the far timer");
    q.remote_fired();
    assert_eq!(q.armed(), None, "the queue's own arming is forgotten");
    // The handed timer, taken from the inbox after the wakeup: 30 µs away, within the lead.
    let deadline = now + 100 * US;
    q.insert(deadline, Slack::None, "handed");
    assert_eq!(q.take_early(), Some(40 * US), "early by the learned lead");
    assert_eq!(q.take_early(), None, "taken");
    assert!(q.needs_clock(), "unarmed until the next flush");

    // Paused time programs no lead: nothing is early then.
    let mut q = queue(100);
    teach(&mut q, 40);
    q.set_leading(false);
    q.remote_fired();
    assert_eq!(q.take_early(), None);
}
