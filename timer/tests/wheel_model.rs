//! The timer queue against a plain reference model (a `BTreeMap`), on random sequences of
//! insert, cancel, reset and advance with random slack and resolution: the same timers fire,
//! none early, none later than deadline + resolution + slack, and the device is never armed
//! later than the earliest timer needs. With a wakeup lead, every expiry of the device also
//! teaches it (a random latency: whatever the advance overshot the programmed instant by),
//! and the device is programmed ahead of the armed instant: still none fires early.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use tickless_timer::{Config, FakeDevice, RearmPolicy, Slack, TimerHandle, TimerQueue};

#[derive(Debug, Clone)]
enum Step {
    Insert {
        offset: i64,
        slack: Slack,
    },
    Cancel(usize),
    Reset {
        pick: usize,
        offset: i64,
        slack: Slack,
    },
    Advance(u64),
    Idle,
}

fn offset() -> impl Strategy<Value = i64> {
    prop_oneof![
        -5_000i64..5_000,
        0i64..200_000,
        0i64..50_000_000,
        0i64..i64::MAX,
        Just(i64::MAX),
    ]
}

fn slack() -> impl Strategy<Value = Slack> {
    prop_oneof![
        4 => Just(Slack::None),
        4 => (0u64..2_000_000).prop_map(|ns| Slack::Bounded(Duration::from_nanos(ns))),
        1 => Just(Slack::Bounded(Duration::MAX)),
        1 => Just(Slack::Unbounded),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        5 => (offset(), slack()).prop_map(|(offset, slack)| Step::Insert { offset, slack }),
        2 => any::<usize>().prop_map(Step::Cancel),
        2 => (any::<usize>(), offset(), slack()).prop_map(|(pick, offset, slack)| Step::Reset { pick, offset, slack }),
        3 => prop_oneof![0u64..100, 0u64..100_000, 0u64..100_000_000, Just(u64::MAX / 4)].prop_map(Step::Advance),
        1 => Just(Step::Idle),
    ]
}

/// A model timer: its deadline and the latest instant it may fire at.
#[derive(Debug, Clone, Copy)]
struct Model {
    deadline: u64,
    latest: u64,
    deferrable: bool,
}

fn model(now: u64, offset: i64, slack: Slack, res: u64) -> Model {
    // Deadlines past the end of the range are clamped to it (documented).
    let deadline = now.saturating_add_signed(offset).min(u64::MAX / res * res);
    let slack_ns = match slack {
        Slack::Bounded(d) => u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
        Slack::None | Slack::Unbounded => 0,
    };
    Model {
        deadline,
        // A deadline already past fires at the next advance: lateness counts from now.
        latest: deadline
            .max(now)
            .saturating_add(res)
            .saturating_add(slack_ns),
        deferrable: slack == Slack::Unbounded,
    }
}

fn run(
    policy: RearmPolicy,
    res: u64,
    lead_max: u64,
    steps: Vec<Step>,
) -> Result<(), TestCaseError> {
    let config = Config {
        policy,
        resolution: Duration::from_nanos(res),
        lead_max: Duration::from_nanos(lead_max),
    };
    let mut q = TimerQueue::new(FakeDevice::default(), config);
    let mut pending: BTreeMap<u64, (TimerHandle, Model)> = BTreeMap::new();
    let mut next_id = 0u64;
    let mut now = 0u64;
    for step in steps {
        match step {
            Step::Insert { offset, slack } => {
                let m = model(now, offset, slack, res);
                let h = q.insert(m.deadline, slack, next_id);
                pending.insert(next_id, (h, m));
                next_id += 1;
            }
            Step::Cancel(pick) if !pending.is_empty() => {
                let id = *pending.keys().nth(pick % pending.len()).unwrap();
                let (h, _) = pending.remove(&id).unwrap();
                prop_assert_eq!(q.cancel(h), Some(id));
                prop_assert_eq!(q.cancel(h), None, "cancelling twice");
            }
            Step::Reset {
                pick,
                offset,
                slack,
            } if !pending.is_empty() && slack != Slack::Unbounded => {
                let id = *pending.keys().nth(pick % pending.len()).unwrap();
                let entry = pending.get_mut(&id).unwrap();
                if entry.1.deferrable {
                    continue;
                }
                entry.1 = model(now, offset, slack, res);
                prop_assert!(q.reset(entry.0, entry.1.deadline, slack));
            }
            Step::Advance(by) => {
                now = now.saturating_add(by);
                if q.programmed().is_some_and(|p| p <= now) {
                    q.device_woke(now);
                    prop_assert!(q.lead() <= lead_max);
                }
                q.advance(now);
                let mut last = 0;
                while let Some((h, id)) = q.pop_expired() {
                    let (handle, m) = pending.remove(&id).ok_or_else(|| {
                        TestCaseError::fail(format!("{id} fired twice or after cancel"))
                    })?;
                    prop_assert_eq!(h, handle);
                    prop_assert!(
                        m.deadline <= now,
                        "timer {} fired early: {:?} at {}",
                        id,
                        m,
                        now
                    );
                    prop_assert!(m.deadline >= last || m.deadline < now, "out of order");
                    last = m.deadline;
                    prop_assert!(!q.contains(h));
                }
                for (id, (_, m)) in &pending {
                    prop_assert!(
                        now < m.latest || m.latest == u64::MAX,
                        "timer {} late: {:?}, now {}",
                        id,
                        m,
                        now
                    );
                }
            }
            Step::Idle => {
                let armed = q.on_idle();
                let needed = pending
                    .values()
                    .filter(|(_, m)| !m.deferrable)
                    .map(|(_, m)| {
                        if m.latest == u64::MAX {
                            m.latest
                        } else {
                            m.latest - 1
                        }
                    })
                    .min();
                if let Some(p) = armed {
                    let a = q.armed().expect("programmed, so armed");
                    prop_assert!(a - p <= lead_max, "programmed {} ahead of {}", p, a);
                }
                if let Some(needed) = needed {
                    let armed = armed
                        .ok_or_else(|| TestCaseError::fail("timers pending, device disarmed"))?;
                    prop_assert!(
                        armed <= needed,
                        "armed at {} but a timer needs {}",
                        armed,
                        needed
                    );
                }
                if policy != RearmPolicy::Lazy {
                    prop_assert_eq!(q.armed(), q.next_expiration());
                }
            }
            _ => {}
        }
        prop_assert_eq!(q.len(), pending.len());
    }
    // Drain: every remaining timer fires, exactly once.
    q.advance(u64::MAX);
    while let Some((_, id)) = q.pop_expired() {
        prop_assert!(pending.remove(&id).is_some());
    }
    prop_assert!(pending.is_empty(), "never fired: {:?}", pending);
    let s = q.stats();
    prop_assert_eq!(s.inserts, next_id);
    prop_assert_eq!(s.fires + s.cancels, next_id);
    Ok(())
}

/// 10,000 cases, unless `PROPTEST_CASES` says otherwise (`scripts/mutants/run.sh` sets 1,000:
/// an explicit `cases` would override the variable).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn queue_matches_model(
        policy in prop_oneof![Just(RearmPolicy::Eager), Just(RearmPolicy::OnIdle), Just(RearmPolicy::Lazy)],
        res in prop_oneof![Just(1u64), Just(1_000), Just(1_000_000), 1u64..5_000],
        lead_max in prop_oneof![Just(0u64), Just(50_000), 0u64..5_000_000],
        steps in prop::collection::vec(step(), 1..60),
    ) {
        run(policy, res, lead_max, steps)?;
    }
}
