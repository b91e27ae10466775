//! The one-wakeup remote shrink on one thread, step by step: a push that shrinks the sleep of a
//! core whose device is installed programs that device (for the timer's deadline, or the
//! earliest instant any pusher lowered the word to) instead of asking for a wake; what the core
//! learns from `take_touched`; what turns the path off. (The interleavings are
//! `loom-tests/tests/timer_inbox.rs`'s.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tickless_timer::internal::{Inbox, Op, RemoteDevice, Wake};
use tickless_timer::Slack;

/// A device that records every instant it is programmed for.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<u64>>>);

impl Recorder {
    fn arms(&self) -> Vec<u64> {
        self.0.lock().unwrap().clone()
    }
}

impl RemoteDevice for Recorder {
    fn arm_remote(&self, at: u64) {
        self.0.lock().unwrap().push(at);
    }
}

fn insert(deadline: u64, slack: Slack) -> Op<u32> {
    Op::Insert {
        deadline,
        slack,
        value: 0,
    }
}

/// An inbox with a recording device installed, its core asleep until `until`.
fn asleep(until: u64) -> (Inbox<u32>, Recorder) {
    let inbox = Inbox::new();
    let device = Recorder::default();
    inbox.remote().install(Some(Box::new(device.clone())));
    assert!(inbox.try_sleep(Some(until)));
    (inbox, device)
}

#[test]
fn a_shrink_programs_the_device_for_the_deadline_and_keeps_the_core_asleep_until_it() {
    let (inbox, device) = asleep(10_000);
    let slack = Slack::Bounded(Duration::from_nanos(500));
    assert_eq!(inbox.push(insert(4_000, slack)).unwrap(), Wake::NotNeeded);
    // Programmed for the deadline, not the end of its window; the word says so.
    assert_eq!(device.arms(), vec![4_000]);
    assert_eq!(inbox.sleeping_until(), Some(4_000));
    assert!(inbox.is_dirty());
    let s = inbox.stats();
    assert_eq!(
        (s.remote_arms, s.remote_wakes_sent, s.remote_wakes_avoided),
        (1, 0, 1)
    );
    // The core, woken by the device, learns it was programmed behind its queue's back, once.
    assert!(inbox.remote().take_touched());
    assert!(!inbox.remote().take_touched());
}

#[test]
fn a_second_shrink_programs_the_earlier_instant_and_a_later_one_nothing() {
    let (inbox, device) = asleep(10_000);
    assert_eq!(
        inbox.push(insert(6_000, Slack::None)).unwrap(),
        Wake::NotNeeded
    );
    assert_eq!(
        inbox.push(insert(3_000, Slack::None)).unwrap(),
        Wake::NotNeeded
    );
    // Due after the instant the device is now programmed for: nothing to do.
    assert_eq!(
        inbox.push(insert(7_000, Slack::None)).unwrap(),
        Wake::NotNeeded
    );
    assert_eq!(device.arms(), vec![6_000, 3_000]);
    assert_eq!(inbox.sleeping_until(), Some(3_000));
    assert_eq!(inbox.stats().remote_arms, 2);
}

#[test]
fn a_task_wake_still_wakes_a_core_whose_sleep_a_shrink_lowered() {
    let (inbox, device) = asleep(10_000);
    assert_eq!(
        inbox.push(insert(3_000, Slack::None)).unwrap(),
        Wake::NotNeeded
    );
    assert_eq!(inbox.push(Op::Now(7)).unwrap(), Wake::Needed);
    assert_eq!(inbox.sleeping_until(), None, "being woken: running");
    // Woken, it drains and arms for itself, under the lock: the pusher's programming is
    // superseded, and no longer needs forgetting.
    inbox.woke();
    inbox.remote().arm_local(|| ());
    assert!(!inbox.remote().take_touched());
    assert_eq!(device.arms(), vec![3_000]);
}

#[test]
fn nothing_is_programmed_for_a_running_core_a_deferrable_timer_or_a_cancel() {
    let inbox = Inbox::new();
    let device = Recorder::default();
    inbox.remote().install(Some(Box::new(device.clone())));
    assert_eq!(
        inbox.push(insert(1_000, Slack::None)).unwrap(),
        Wake::NotNeeded
    );
    let mut ops = Vec::new();
    inbox.drain(&mut ops);
    assert!(inbox.try_sleep(Some(10_000)));
    assert_eq!(
        inbox.push(insert(1_000, Slack::Unbounded)).unwrap(),
        Wake::NotNeeded
    );
    assert!(device.arms().is_empty());
    assert_eq!(inbox.stats().remote_arms, 0);
}

#[test]
fn without_an_installed_device_a_shrink_wakes_the_core() {
    let (inbox, device) = asleep(10_000);
    inbox.remote().install(None);
    assert_eq!(
        inbox.push(insert(3_000, Slack::None)).unwrap(),
        Wake::Needed
    );
    assert!(device.arms().is_empty());
    assert_eq!(inbox.sleeping_until(), None);
    // And a plain inbox never had one.
    let plain = Inbox::<u32>::new();
    assert!(plain.try_sleep(Some(10_000)));
    assert_eq!(
        plain.push(insert(3_000, Slack::None)).unwrap(),
        Wake::Needed
    );
    assert_eq!(plain.stats().remote_arms, 0);
}

#[test]
fn the_baseline_that_always_wakes_never_programs_the_device() {
    let inbox = Inbox::<u32>::always_waking();
    let device = Recorder::default();
    inbox.remote().install(Some(Box::new(device.clone())));
    assert!(inbox.try_sleep(Some(10_000)));
    assert_eq!(
        inbox.push(insert(3_000, Slack::None)).unwrap(),
        Wake::Needed
    );
    assert!(device.arms().is_empty());
}

#[test]
fn the_core_s_own_arming_clears_what_a_pusher_left() {
    let (inbox, device) = asleep(10_000);
    assert_eq!(
        inbox.push(insert(3_000, Slack::None)).unwrap(),
        Wake::NotNeeded
    );
    // The core wakes by itself (an I/O event) and re-arms before the device fires.
    inbox.woke();
    let armed = inbox.remote().arm_local(|| 42);
    assert_eq!(armed, 42, "arm_local hands back what the arming returned");
    assert!(!inbox.remote().take_touched());
    assert_eq!(device.arms(), vec![3_000]);
}

#[test]
fn a_shrink_leads_by_the_core_s_published_wakeup_lead() {
    let (inbox, device) = asleep(10_000);
    inbox.remote().set_lead(700);
    assert_eq!(
        inbox.push(insert(4_000, Slack::None)).unwrap(),
        Wake::NotNeeded
    );
    assert_eq!(device.arms(), vec![3_300]);
    assert_eq!(inbox.sleeping_until(), Some(3_300));
    // A lead longer than the time to the deadline programs "now" (1 ns: never 0, "disarmed").
    assert_eq!(
        inbox.push(insert(500, Slack::None)).unwrap(),
        Wake::NotNeeded
    );
    assert_eq!(device.arms(), vec![3_300, 1]);
}
