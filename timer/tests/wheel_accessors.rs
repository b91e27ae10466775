//! What the wheel says about itself: elapsed tick, length, a timer's tick and value, and the
//! deferrable count, through inserts, removals, resets and expiry.

use tickless_timer::internal::Wheel;

#[test]
fn elapsed_follows_advance_and_never_goes_back() {
    let mut w = Wheel::new();
    assert_eq!(w.elapsed(), 0);
    w.insert(700, false, 'a');
    assert_eq!(w.advance(500), 0);
    assert_eq!(w.elapsed(), 500);
    assert_eq!(w.advance(900), 1);
    assert_eq!(w.elapsed(), 900);
    assert_eq!(w.advance(100), 0, "the past: nothing to do");
    assert_eq!(w.elapsed(), 900);
}

#[test]
fn length_and_emptiness() {
    let mut w = Wheel::with_capacity(4);
    assert!(w.is_empty());
    assert_eq!(w.len(), 0);
    let a = w.insert(10, false, 'a');
    assert!(!w.is_empty());
    w.insert(20, true, 'b');
    assert_eq!(w.len(), 2);
    w.remove(a);
    assert_eq!(w.len(), 1);
    w.advance(20);
    assert_eq!(w.len(), 1, "due timers are pending until popped");
    assert!(!w.is_empty());
    assert_eq!(w.pop_due().map(|(_, v)| v), Some('b'));
    assert!(w.is_empty());
}

#[test]
fn tick_of_and_get_mut_reach_only_pending_timers() {
    let mut w = Wheel::new();
    let a = w.insert(4_097, false, 1);
    let b = w.insert(65, false, 2);
    assert_eq!(w.tick_of(a), Some(4_097));
    assert_eq!(w.tick_of(b), Some(65));
    assert!(w.reset(a, 300));
    assert_eq!(w.tick_of(a), Some(300));
    *w.get_mut(a).unwrap() += 10;
    assert_eq!(w.get_mut(b).copied(), Some(2));
    assert_eq!(w.remove(b), Some(2));
    assert_eq!(w.tick_of(b), None);
    assert_eq!(w.get_mut(b), None);
    assert!(!w.contains(b));
    w.advance(300);
    // Due but not popped: still pending.
    assert_eq!(w.tick_of(a), Some(300));
    assert!(w.contains(a));
    assert_eq!(w.pop_due(), Some((a, 11)));
    assert_eq!(w.tick_of(a), None);
    assert!(!w.reset(a, 400));
}

#[test]
fn the_deferrable_count_goes_down_however_a_timer_leaves() {
    let mut w = Wheel::new();
    assert!(!w.has_deferrable());
    let a = w.insert(100, true, 'a');
    let b = w.insert(200, true, 'b');
    w.insert(150, false, 'x');
    assert!(w.has_deferrable());
    // Removed.
    assert_eq!(w.remove(a), Some('a'));
    assert!(w.has_deferrable(), "b is left");
    // Reset: still one deferrable timer.
    assert!(w.reset(b, 120));
    assert!(w.has_deferrable());
    // Fired: due is still pending, popped is gone.
    w.advance(120);
    assert!(w.has_deferrable(), "due, not popped");
    assert_eq!(w.pop_due().map(|(_, v)| v), Some('b'));
    assert!(!w.has_deferrable());
    assert_eq!(w.len(), 1);
    // Removing non-deferrable timers leaves the count alone.
    let c = w.insert(500, true, 'c');
    let y = w.insert(600, false, 'y');
    w.remove(y);
    assert!(w.has_deferrable());
    w.remove(c);
    assert!(!w.has_deferrable());
}

#[test]
fn has_due_until_the_last_is_popped() {
    let mut w = Wheel::new();
    assert!(!w.has_due());
    w.insert(10, false, 1);
    w.insert(10, true, 2);
    assert!(!w.has_due());
    w.advance(10);
    assert!(w.has_due());
    w.pop_due();
    assert!(w.has_due());
    w.pop_due();
    assert!(!w.has_due());
}

#[test]
fn next_deadline_is_the_earliest_tick_of_any_lane_deferrable_ones_included() {
    let mut w = Wheel::new();
    assert_eq!(w.next_deadline(), None);
    w.insert_within(50, 1_000, 'a'); // its window ends at 1,050
    w.insert(40, true, 'b'); // deferrable
    w.insert_within(30, 0, 'c');
    assert_eq!(w.next_deadline(), Some(30));
    assert_eq!(w.next_expiration(), Some(30));
    w.advance(30);
    assert_eq!(w.next_deadline(), Some(40), "due timers are not counted");
    assert_eq!(w.next_expiration(), Some(30), "due and not popped: now");
    while w.pop_due().is_some() {}
    assert_eq!(w.next_expiration(), Some(1_050), "the deferrable one never");
    w.advance(45);
    while w.pop_due().is_some() {}
    assert_eq!(w.next_deadline(), Some(50));
    // Far out, at a higher level: never later than the timer, and exact once it is close.
    w.insert(1_000_000, false, 'd');
    w.advance(1_000);
    while w.pop_due().is_some() {}
    assert!(w
        .next_deadline()
        .is_some_and(|d| (1_000..=1_000_000).contains(&d)));
    w.advance(999_990);
    assert_eq!(w.next_deadline(), Some(1_000_000));
}
