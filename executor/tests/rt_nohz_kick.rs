//! The lazy-nohz-kick experiment (Linux, 2015) as a test: handing timers with random
//! deadlines to sleeping cores wakes them less with the sleep-word rule than with "always
//! wake". The figures come from `examples/nohz_kick.rs`; here we assert the rule saves wakes.

#[path = "../examples/nohz_kick.rs"]
#[allow(dead_code)]
mod nohz_kick;

/// The tests count one core's wakeups: run one at a time, so that one's runtime does not
/// crowd the other's core off its CPU (2 CPUs) and change how it sleeps.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn the_sleep_word_rule_saves_wakeups() -> std::io::Result<()> {
    let _one = one_at_a_time();
    let always = nohz_kick::experiment(true, 1_000)?;
    let rule = nohz_kick::experiment(false, 1_000)?;
    println!("always: {always:?}\nrule: {rule:?}");
    // Every timer fired, in both settings.
    assert_eq!(always.timer_fires, 1_000);
    assert_eq!(rule.timer_fires, 1_000);
    assert_eq!(rule.remote_wakes_sent + rule.remote_wakes_avoided, 1_000);
    assert!(
        rule.remote_wakes_sent < always.remote_wakes_sent,
        "kicks: rule {rule:?} vs always {always:?}"
    );
    assert!(
        rule.parks < always.parks,
        "wakeups: rule {rule:?} vs always {always:?}"
    );
    Ok(())
}

#[test]
fn a_timer_handed_to_a_sleeping_core_wakes_it_once_not_twice() -> std::io::Result<()> {
    let _one = one_at_a_time();
    let n = 50;
    let rule = nohz_kick::shrinks(false, n)?;
    let always = nohz_kick::shrinks(true, n)?;
    println!("rule: {rule:?}\nalways: {always:?}");
    let n = u64::from(n);
    assert_eq!((rule.timer_fires, always.timer_fires), (n, n));
    // Each hand-over found the core asleep past its deadline: the handing thread programmed
    // the core's timerfd instead of writing its eventfd.
    assert_eq!((rule.remote_arms, rule.remote_wakes_sent), (n, 0));
    // The baseline wakes it to re-arm, then again at the deadline.
    assert_eq!((always.remote_arms, always.remote_wakes_sent), (0, n));
    assert!(
        rule.parks * 3 < always.parks * 2,
        "wakeups: rule {} vs always {}",
        rule.parks,
        always.parks
    );
    // With a learned lead, the handing thread programs the timerfd that far ahead of the
    // deadline: the core, woken early, waits the rest out awake instead of parking again
    // (1.34-1.80 wakeups per handed timer before).
    assert!(rule.wakeup_lead_ns > 0, "no lead learned: {rule:?}");
    assert!(
        rule.parks * 100 <= n * 105,
        "{} wakeups for {n} handed timers",
        rule.parks
    );
    Ok(())
}

#[test]
fn a_core_whose_timerfd_a_handing_thread_programmed_still_fires_its_own_timers(
) -> std::io::Result<()> {
    let _one = one_at_a_time();
    use std::sync::mpsc;
    use std::time::Duration;
    use tickless::time::Instant;

    let rt = tickless::Builder::new().cores(2).build()?;
    let core1 = rt.handle(1);
    // Core 1's own timer, 40 ms out, armed by core 1 itself.
    let (tx, rx) = mpsc::channel();
    core1.spawn(async move {
        tickless::time::sleep(Duration::from_millis(40)).await;
        tx.send(()).unwrap();
    });
    while !core1.is_parked() {
        std::thread::yield_now();
    }
    let before = rt.stats().cores[1];
    // A timer 5 ms out shrinks its sleep: this thread programs core 1's timerfd for it.
    core1
        .spawn_at(Instant::now() + Duration::from_millis(5), async {})
        .join()
        .map_err(std::io::Error::other)?;
    assert_eq!(rt.stats().cores[1].remote_arms - before.remote_arms, 1);
    // Woken by that programming, core 1 must arm its timerfd again for its own timer. (A hang
    // guard, not a measurement: the sleep is 40 ms.)
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the core's own timer never fired after its timerfd was programmed remotely");
    Ok(())
}
