//! `#[tickless::test]` and `#[tickless::main]`'s settings.

use std::time::Duration;

use tickless::time::{sleep, Instant};

#[tickless::test]
async fn a_test_runs_on_one_core_by_default() {
    assert_eq!(tickless::core_id(), 0);
    let other = tickless::spawn(async { tickless::core_id() })
        .await
        .unwrap();
    assert_eq!(other, 0);
}

#[tickless::test(start_paused = true)]
async fn paused_time_jumps_to_the_next_timer() {
    let start = Instant::now();
    sleep(Duration::from_secs(3600)).await;
    // The jump lands at the end of the sleep's window: its deadline plus the default slack.
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(3600) + tickless::runtime::DEFAULT_SLACK_MAX
    );
}

#[tickless::test(cores = 2)]
async fn a_cores_setting_builds_that_many_cores_and_the_test_runs_on_core_0() -> std::io::Result<()>
{
    let on_1 = tickless::runtime::Handle::current().core();
    assert_eq!(on_1, 0);
    Ok(())
}

mod as_main {
    #[tickless::main(cores = 1)]
    pub async fn main() -> u32 {
        tickless::task::yield_now().await;
        7
    }
}

#[test]
fn main_builds_a_runtime_and_returns_the_body_s_value() {
    assert_eq!(as_main::main(), 7);
}

#[tickless::test(start_paused = true, timer_policy = OnIdle, default_slack_us = 1000)]
async fn policy_and_slack_settings_reach_the_runtime() {
    // 1 ms of default slack: a 100 µs sleep alone fires at the end of its window.
    let start = Instant::now();
    sleep(Duration::from_micros(100)).await;
    assert_eq!(start.elapsed(), Duration::from_micros(1_100));
}

#[tickless::test(tokio_context = true)]
async fn a_tokio_context_setting_lets_tokio_s_own_calls_run() {
    // tokio's timer and spawn need a tokio context: without the setting they panic.
    tokio::time::sleep(Duration::from_millis(1)).await;
    let seven = tokio::spawn(async { 7 }).await.unwrap();
    assert_eq!(seven, 7);
}

#[tickless::test]
async fn with_the_feature_a_plain_test_has_the_tokio_context() {
    // A renamed `#[tokio::test]`: what needs tokio's context (sqlx, reqwest) runs.
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(tokio::spawn(async { 7 }).await.unwrap(), 7);
}

#[tickless::test(tokio_context = false)]
async fn turned_off_there_is_no_tokio_context() {
    assert!(tokio::runtime::Handle::try_current().is_err());
}

/// The CPUs this thread may run on (`sched_getaffinity` of the calling thread).
fn allowed_cpus_of_this_thread() -> usize {
    tickless_io::internal::cpu::allowed_cpus().unwrap().len()
}

#[tickless::test(pin = true)]
async fn a_pin_setting_pins_the_test_s_core_to_one_cpu() {
    // Core 0 is the test's thread: pinned while the runtime lives.
    assert_eq!(allowed_cpus_of_this_thread(), 1);
}

#[tickless::test]
async fn without_the_pin_setting_the_core_may_run_on_every_allowed_cpu() {
    let everywhere = std::thread::spawn(allowed_cpus_of_this_thread)
        .join()
        .unwrap();
    assert_eq!(allowed_cpus_of_this_thread(), everywhere);
}
