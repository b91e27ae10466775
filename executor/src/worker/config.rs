//! What a core needs to know, from the runtime, to start.

use std::time::Duration;

use tickless_timer::{Config, Slack};

use crate::worker::clock::Epoch;

/// Everything a core needs to know, from the runtime, to start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CoreConfig {
    /// Wheel policy and resolution.
    pub(crate) timer: Config,
    /// Slack of timers that give none.
    pub(crate) default_slack: Slack,
    /// Paused time.
    pub(crate) paused: bool,
    /// Idle spin window (zero: park at once).
    pub(crate) spin: Duration,
    /// The runtime-wide instant that is 0 ns on every core's clock.
    pub(crate) epoch: Epoch,
    /// Wake a sleeping core on every hand-over (the experiment's baseline).
    pub(crate) always_wake: bool,
}
