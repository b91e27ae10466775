//! A slot whose earliest timer was removed keeps an early bound, marked stale, until
//! `next_expiration` makes it exact again. Emptying or filling *another* slot of the same level
//! must leave that mark alone, or the early bound stands and costs a needless early wakeup.
//!
//! All timers here are on level 1 of the wheel (ticks 64 to 4,095 from tick 0: slot = tick / 64).

use tickless_timer::internal::Wheel;

/// A wheel whose slot 2 of level 1 (ticks 128 to 191) holds one timer at 150 and a stale bound
/// of 130, left by the removal of its earliest timer.
fn stale_slot() -> Wheel<u64> {
    let mut w = Wheel::new();
    let early = w.insert(130, false, 130);
    w.insert(150, false, 150);
    assert_eq!(w.remove(early), Some(130));
    w
}

#[test]
fn next_expiration_makes_a_stale_bound_exact() {
    let mut w = stale_slot();
    assert_eq!(w.next_expiration(), Some(150));
}

#[test]
fn a_slot_emptied_by_advance_leaves_the_others_stale() {
    let mut w = stale_slot();
    w.insert(70, false, 70); // slot 1
    assert_eq!(w.advance(70), 1);
    assert_eq!(w.pop_due().map(|(_, v)| v), Some(70));
    assert_eq!(w.next_expiration(), Some(150));
}

#[test]
fn a_slot_emptied_by_remove_leaves_the_others_stale() {
    let mut w = Wheel::new();
    let alone = w.insert(300, false, 300); // slot 4
    let early = w.insert(130, false, 130);
    w.insert(150, false, 150);
    w.remove(early);
    w.remove(alone);
    assert_eq!(w.next_expiration(), Some(150));
}

#[test]
fn a_slot_filled_by_insert_leaves_the_others_stale() {
    let mut w = stale_slot();
    w.insert(300, false, 300); // slot 4, empty until now
    assert_eq!(w.next_expiration(), Some(150));
    // And the new slot's own bound is exact.
    w.advance(150);
    assert_eq!(w.pop_due().map(|(_, v)| v), Some(150));
    assert_eq!(w.next_expiration(), Some(300));
}

#[test]
fn the_same_holds_for_deferrable_timers() {
    // Deferrable timers never count for `next_expiration`, but their slots' bounds decide when
    // `advance` looks at them: a stale one only costs a cascade, never a late timer.
    let mut w = Wheel::new();
    let early = w.insert(130, true, 130);
    w.insert(150, true, 150);
    w.remove(early);
    w.insert(70, true, 70);
    assert_eq!(w.next_expiration(), None);
    assert_eq!(w.advance(140), 1);
    assert_eq!(w.pop_due().map(|(_, v)| v), Some(70));
    assert_eq!(w.advance(150), 1);
    assert_eq!(w.pop_due().map(|(_, v)| v), Some(150));
    assert!(w.is_empty());
}
