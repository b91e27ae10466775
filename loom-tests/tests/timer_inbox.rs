//! The hand-over protocol (`tickless_timer::internal::Inbox`), which carries every cross-thread
//! hand-off of the runtime: timer inserts and cancels, remote task wakes and remote spawns
//! (`Op::Now`). A remote insert or wake racing the core going to sleep is never lost; no wake is
//! sent while the core runs or when the deadline does not shrink its sleep; racing inserts make
//! one wake; an operation racing the core's shutdown is either taken by the core or handed back
//! to its pusher, never lost and never both. A timer that shrinks the sleep of a core whose
//! device other threads may program (the one-wakeup remote shrink) programs that device instead
//! of waking the core, and the device ends armed no later than every timer the core has not
//! seen, whatever the core and other pushers do meanwhile.
//!
//! These models drive the `Inbox` type directly (`go_to_sleep` below is a minimal core, not
//! the executor's); the executor's own idle path over it (the loop, the idle sequence, the stop
//! request, the `block_on` waker, shutdown) runs in `idle_sequence.rs`.
#![cfg(loom)]

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;
use tickless_timer::internal::{Inbox, Op, RemoteDevice, Wake};
use tickless_timer::Slack;

/// The core's own armed wakeup in these models.
const ARMED: u64 = 1_000;

fn insert(deadline: u64) -> Op<u64> {
    Op::Insert {
        deadline,
        slack: Slack::None,
        value: deadline,
    }
}

/// The core's side of going idle: drain, then publish the sleep, retrying while pushes race in.
/// Returns (ops seen before sleeping, the instant it published).
fn go_to_sleep(inbox: &Inbox<u64>, seen: &mut Vec<Op<u64>>) -> u64 {
    loop {
        inbox.drain(seen);
        let until = seen
            .iter()
            .filter_map(|op| match op {
                Op::Insert { deadline, .. } => Some(*deadline),
                Op::Now(_) => Some(0),
                Op::Cancel(_) => None,
            })
            .fold(ARMED, u64::min);
        if inbox.try_sleep(Some(until)) {
            return until;
        }
    }
}

#[test]
fn remote_insert_racing_sleep_is_never_lost() {
    loom::model(|| {
        let inbox = Arc::new(Inbox::new());
        let pusher = {
            let inbox = inbox.clone();
            thread::spawn(move || inbox.push(insert(500)).unwrap())
        };
        let mut seen = Vec::new();
        let until = go_to_sleep(&inbox, &mut seen);
        let wake = pusher.join().unwrap();
        if seen.is_empty() {
            // Asleep until 1000 without the 500 µs timer: only the pusher's wake can save it.
            assert_eq!(until, ARMED);
            assert_eq!(wake, Wake::Needed, "lost wakeup");
        } else {
            assert_eq!(until, 500);
            assert_eq!(wake, Wake::NotNeeded, "woke a core that had seen the timer");
        }
        inbox.woke();
        inbox.drain(&mut seen);
        assert_eq!(seen.len(), 1);
    });
}

#[test]
fn no_wake_when_the_deadline_does_not_shrink_the_sleep() {
    loom::model(|| {
        let inbox = Arc::new(Inbox::new());
        let pusher = {
            let inbox = inbox.clone();
            thread::spawn(move || inbox.push(insert(ARMED + 1)).unwrap())
        };
        let mut seen = Vec::new();
        go_to_sleep(&inbox, &mut seen);
        assert_eq!(pusher.join().unwrap(), Wake::NotNeeded);
        inbox.woke();
        inbox.drain(&mut seen);
        assert_eq!(seen.len(), 1);
        assert_eq!(inbox.stats().remote_wakes_sent, 0);
    });
}

#[test]
fn no_wake_while_the_core_runs() {
    loom::model(|| {
        let inbox = Arc::new(Inbox::new());
        let pusher = {
            let inbox = inbox.clone();
            thread::spawn(move || {
                let a = inbox.push(insert(0)).unwrap();
                let b = inbox.notify(0);
                (a, b)
            })
        };
        // The core runs and drains, never sleeping.
        let mut seen = Vec::new();
        inbox.drain(&mut seen);
        let (a, b) = pusher.join().unwrap();
        assert_eq!((a, b), (Wake::NotNeeded, Wake::NotNeeded));
        inbox.drain(&mut seen);
        assert_eq!(
            seen.len(),
            1,
            "the push is drained, on the first or the second try"
        );
    });
}

#[test]
fn two_racing_inserts_make_one_wake() {
    loom::model(|| {
        let inbox = Arc::new(Inbox::new());
        let mut seen = Vec::new();
        assert_eq!(go_to_sleep(&inbox, &mut seen), ARMED);
        let pushers: Vec<_> = [300, 400]
            .into_iter()
            .map(|d| {
                let inbox = inbox.clone();
                thread::spawn(move || inbox.push(insert(d)).unwrap())
            })
            .collect();
        let wakes = pushers
            .into_iter()
            .map(|p| p.join().unwrap())
            .filter(|w| *w == Wake::Needed)
            .count();
        assert_eq!(wakes, 1);
        inbox.woke();
        inbox.drain(&mut seen);
        assert_eq!(seen.len(), 2);
        let s = inbox.stats();
        assert_eq!((s.remote_wakes_sent, s.remote_wakes_avoided), (1, 1));
    });
}

#[test]
fn two_inserts_racing_the_sleep_wake_at_most_once_and_never_lose() {
    loom::model(|| {
        let inbox = Arc::new(Inbox::new());
        let pushers: Vec<_> = [300, 400]
            .into_iter()
            .map(|d| {
                let inbox = inbox.clone();
                thread::spawn(move || inbox.push(insert(d)).unwrap())
            })
            .collect();
        let mut seen = Vec::new();
        let until = go_to_sleep(&inbox, &mut seen);
        let wakes = pushers
            .into_iter()
            .map(|p| p.join().unwrap())
            .filter(|w| *w == Wake::Needed)
            .count();
        assert!(wakes <= 1);
        // A timer the core did not see before sleeping, due before it wakes, must have woken it.
        let seen_deadlines: Vec<u64> = seen
            .iter()
            .map(|op| match op {
                Op::Insert { deadline, .. } => *deadline,
                Op::Cancel(_) | Op::Now(_) => unreachable!(),
            })
            .collect();
        let needs_wake = [300, 400]
            .iter()
            .any(|d| !seen_deadlines.contains(d) && *d < until);
        assert_eq!(
            wakes, needs_wake as usize,
            "slept until {until}, saw {seen_deadlines:?}"
        );
        inbox.woke();
        inbox.drain(&mut seen);
        assert_eq!(seen.len(), 2);
    });
}

#[test]
fn remote_task_wake_racing_sleep_is_never_lost() {
    // A task woken from another thread (or a task spawned onto the core) is `Op::Now`.
    loom::model(|| {
        let inbox = Arc::new(Inbox::new());
        let waker = {
            let inbox = inbox.clone();
            thread::spawn(move || inbox.push(Op::Now(7)).unwrap())
        };
        let mut seen = Vec::new();
        let until = go_to_sleep(&inbox, &mut seen);
        let wake = waker.join().unwrap();
        if seen.is_empty() {
            assert_eq!(wake, Wake::Needed, "lost wakeup: slept until {until}");
        } else {
            // The core saw the task before sleeping: it runs it rather than sleep (until 0).
            assert_eq!(until, 0);
            assert_eq!(wake, Wake::NotNeeded);
        }
    });
}

#[test]
fn shutdown_racing_a_remote_wake_takes_or_returns_it() {
    loom::model(|| {
        let inbox = Arc::new(Inbox::new());
        let pusher = {
            let inbox = inbox.clone();
            thread::spawn(move || inbox.push(Op::Now(7)).is_err())
        };
        // The core drains once, then shuts down.
        let mut taken = Vec::new();
        inbox.drain(&mut taken);
        taken.extend(inbox.close());
        let returned = pusher.join().unwrap();
        assert_eq!(taken.len() + returned as usize, 1, "lost or duplicated");
        assert!(inbox.push(Op::Now(8)).is_err(), "closed for good");
    });
}

/// The core's timerfd in the remote-shrink models: the instant it is programmed for.
struct ModelDevice(Arc<AtomicU64>);

impl RemoteDevice for ModelDevice {
    fn arm_remote(&self, at: u64) {
        self.0.store(at, Ordering::SeqCst);
    }
}

/// A core whose device other threads may program, asleep with its device armed for `ARMED`.
fn sleeping_core_with_device() -> (Arc<Inbox<u64>>, Arc<AtomicU64>) {
    let inbox = Arc::new(Inbox::new());
    let device = Arc::new(AtomicU64::new(0));
    inbox
        .remote()
        .install(Some(Box::new(ModelDevice(device.clone()))));
    let mut seen = Vec::new();
    inbox
        .remote()
        .arm_local(|| device.store(ARMED, Ordering::SeqCst));
    assert_eq!(go_to_sleep(&inbox, &mut seen), ARMED);
    (inbox, device)
}

/// The deadlines of the inserts among `ops` (a `Now` counts as 0).
fn deadlines(ops: &[Op<u64>]) -> Vec<u64> {
    ops.iter()
        .filter_map(|op| match op {
            Op::Insert { deadline, .. } => Some(*deadline),
            Op::Now(_) => Some(0),
            Op::Cancel(_) => None,
        })
        .collect()
}

#[test]
fn racing_shrinks_and_the_core_s_own_wakeup_leave_the_device_armed_for_the_earliest() {
    // Two threads hand the sleeping core timers that shrink its sleep, while the core wakes by
    // itself (an I/O event, say), takes what was handed over, adds a timer of its own (200) and
    // goes back to sleep, arming its device under the lock. Whatever the interleaving: nobody
    // writes the eventfd, and the device ends armed no later than the core's own timer and
    // every handed timer it has not seen (a pusher's programming never lands after the core's
    // own; of two pushers', the earlier instant stays).
    loom::model(|| {
        let (inbox, device) = sleeping_core_with_device();
        let pushers: Vec<_> = [500, 300]
            .into_iter()
            .map(|d| {
                let inbox = inbox.clone();
                thread::spawn(move || inbox.push(insert(d)).unwrap())
            })
            .collect();
        let core = {
            let (inbox, device) = (inbox.clone(), device.clone());
            thread::spawn(move || {
                inbox.woke();
                let touched = inbox.remote().take_touched();
                let mut seen = Vec::new();
                loop {
                    inbox.drain(&mut seen);
                    let earliest = deadlines(&seen).into_iter().fold(200, u64::min);
                    inbox
                        .remote()
                        .arm_local(|| device.store(earliest, Ordering::SeqCst));
                    if inbox.try_sleep(Some(earliest)) {
                        return (seen, touched);
                    }
                }
            })
        };
        let wakes: Vec<Wake> = pushers.into_iter().map(|p| p.join().unwrap()).collect();
        let (seen, _) = core.join().unwrap();
        assert!(
            wakes.iter().all(|w| *w == Wake::NotNeeded),
            "a shrink wrote the eventfd: {wakes:?}"
        );
        let armed = device.load(Ordering::SeqCst);
        let seen = deadlines(&seen);
        let unseen = [500, 300].into_iter().filter(|d| !seen.contains(d));
        let needed = unseen.fold(200, u64::min);
        assert!(
            armed <= needed,
            "armed for {armed}, but {needed} is due first (the core saw {seen:?})"
        );
        let s = inbox.stats();
        assert_eq!(s.remote_wakes_sent, 0);
    });
}

#[test]
fn a_shrink_programs_the_sleeping_core_s_device_and_a_later_wake_still_wakes_it() {
    // One thread hands the sleeping core a timer that shrinks its sleep; another wakes a task
    // on it (`Now`). The core stays asleep throughout (it never drains here). The shrink
    // programs the device for its deadline, and the `Now` wakes the core whatever the order:
    // a lowered sleep is still a sleep.
    loom::model(|| {
        let (inbox, device) = sleeping_core_with_device();
        let shrink = {
            let inbox = inbox.clone();
            thread::spawn(move || inbox.push(insert(400)).unwrap())
        };
        let now = {
            let inbox = inbox.clone();
            thread::spawn(move || inbox.push(Op::Now(7)).unwrap())
        };
        let shrink = shrink.join().unwrap();
        let now = now.join().unwrap();
        assert_eq!(now, Wake::Needed, "the task wake was lost");
        assert_eq!(shrink, Wake::NotNeeded);
        let armed = device.load(Ordering::SeqCst);
        // Programmed for the timer, unless the wake came first (the core, woken, arms for it).
        assert!(
            armed == 400 || (armed == ARMED && inbox.stats().remote_arms == 0),
            "armed for {armed}"
        );
        assert_eq!(inbox.remote().take_touched(), armed == 400);
    });
}

#[test]
fn a_shrink_racing_the_device_s_removal_wakes_the_core() {
    // The core stops letting other threads program its device (its clock is paused) while a
    // thread hands it a timer that shrinks its sleep: either the device is programmed before the
    // removal, or the pusher wakes the core.
    loom::model(|| {
        let (inbox, device) = sleeping_core_with_device();
        let pusher = {
            let inbox = inbox.clone();
            thread::spawn(move || inbox.push(insert(400)).unwrap())
        };
        inbox.remote().install(None);
        let wake = pusher.join().unwrap();
        let armed = device.load(Ordering::SeqCst);
        assert!(
            (wake == Wake::Needed) != (armed == 400),
            "woken: {wake:?}, armed for {armed}"
        );
    });
}
