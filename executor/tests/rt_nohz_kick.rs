//! The lazy-nohz-kick experiment (Linux, 2015) as a test: handing timers with random
//! deadlines to sleeping cores wakes them less with the sleep-word rule than with "always
//! wake". The figures come from `examples/nohz_kick.rs`; here we assert the rule saves wakes.

#[path = "../examples/nohz_kick.rs"]
#[allow(dead_code)]
mod nohz_kick;

#[test]
fn the_sleep_word_rule_saves_wakeups() -> std::io::Result<()> {
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
