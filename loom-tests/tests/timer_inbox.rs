//! The hand-over protocol (`tickless_timer::internal::Inbox`), which carries every cross-thread
//! hand-off of the runtime: timer inserts and cancels, remote task wakes and remote spawns
//! (`Op::Now`). A remote insert or wake racing the core going to sleep is never lost; no wake is
//! sent while the core runs or when the deadline does not shrink its sleep; racing inserts make
//! one wake; an operation racing the core's shutdown is either taken by the core or handed back
//! to its pusher, never lost and never both.
//!
//! These models drive the `Inbox` type directly (`go_to_sleep` below is a minimal core, not
//! the executor's); the executor's own idle path over it (the loop, the idle sequence, the stop
//! request, the `block_on` waker, shutdown) runs in `idle_sequence.rs`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use tickless_timer::internal::{Inbox, Op, Wake};
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
