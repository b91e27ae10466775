//! Adding counters: every field is summed, by `+` and by `+=`, none dropped or mixed up.

use tickless_timer::TimerStats;

/// Counters whose fields all differ from each other and from `b`'s, so that a field summed
/// wrongly (subtracted, multiplied, taken from the wrong side or dropped) shows.
fn a() -> TimerStats {
    TimerStats {
        inserts: 30,
        cancels: 31,
        cancels_detached: 37,
        fires: 32,
        rearms: 33,
        spurious: 34,
        early: 38,
        remote_wakes_sent: 35,
        remote_wakes_avoided: 36,
        remote_arms: 39,
    }
}

fn b() -> TimerStats {
    TimerStats {
        inserts: 3,
        cancels: 4,
        cancels_detached: 10,
        fires: 5,
        rearms: 6,
        spurious: 7,
        early: 11,
        remote_wakes_sent: 8,
        remote_wakes_avoided: 9,
        remote_arms: 12,
    }
}

fn sum() -> TimerStats {
    TimerStats {
        inserts: 33,
        cancels: 35,
        cancels_detached: 47,
        fires: 37,
        rearms: 39,
        spurious: 41,
        early: 49,
        remote_wakes_sent: 43,
        remote_wakes_avoided: 45,
        remote_arms: 51,
    }
}

#[test]
fn add_sums_every_field() {
    assert_eq!(a() + b(), sum());
    assert_eq!(b() + a(), sum());
    assert_eq!(a() + TimerStats::default(), a());
}

#[test]
fn add_assign_sums_every_field() {
    let mut s = a();
    s += b();
    assert_eq!(s, sum());
    s += TimerStats::default();
    assert_eq!(s, sum());
}

#[test]
fn a_queue_and_its_hand_over_add_up() {
    // The runtime reports a core's counters as the queue's plus the hand-over's.
    let queue = TimerStats {
        inserts: 2,
        fires: 1,
        ..TimerStats::default()
    };
    let handover = TimerStats {
        remote_wakes_sent: 1,
        remote_wakes_avoided: 4,
        ..TimerStats::default()
    };
    let mut total = TimerStats::default();
    total += queue;
    total += handover;
    assert_eq!(
        total,
        TimerStats {
            inserts: 2,
            fires: 1,
            remote_wakes_sent: 1,
            remote_wakes_avoided: 4,
            ..TimerStats::default()
        }
    );
}
