//! The contenders: tickless in each configuration the comparison needs, the runtimes a user
//! would pick instead, and the baselines without a runtime. One file each; every file builds
//! its runtime the way that runtime's users would and runs the shared workloads in it.

pub mod blocking;
pub mod monoio;
pub mod smol;
pub mod tickless;
pub mod tokio;

use std::io;
use std::process::Command;
use std::time::Duration;

use ::tickless::RearmPolicy;

use crate::workload::pingpong::{Plan, Run};
use crate::workload::server;
use crate::workload::timers::{ChurnPlan, ChurnResult, IdlePlan, IdleResult, Lateness, SleepPlan};

/// One contender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contender {
    /// tickless, configured.
    Tickless(tickless::Config),
    /// tickless's own server shape, `serve_per_core` (`server_tokio_shape` only).
    TicklessPerCore,
    /// tokio, current-thread runtime(s); in `server_tokio_shape`, the multi-thread runtime.
    Tokio,
    /// async-executor's `LocalExecutor` on async-io.
    Smol,
    /// monoio with a driver.
    Monoio(monoio::Driver),
    /// Two blocking threads (pipe-test).
    Threads,
    /// One thread, the round trip's system calls back to back.
    Floor,
}

/// The spin window of `tickless_spin50us`.
pub const SPIN: Duration = Duration::from_micros(50);
/// The slack of `tickless_slack1ms`.
pub const SLACK: Duration = Duration::from_millis(1);

/// tickless with a fixed default slack.
const fn fixed_slack(slack: Duration) -> Contender {
    Contender::Tickless(tickless::Config {
        slack: Some(tickless::Slack::Fixed(slack)),
        ..tickless::Config::DEFAULT
    })
}

/// tickless with a proportional default slack of `1/divisor` up to `max`.
const fn proportional_slack(divisor: u32, max: Duration) -> Contender {
    Contender::Tickless(tickless::Config {
        slack: Some(tickless::Slack::Proportional(divisor, max)),
        ..tickless::Config::DEFAULT
    })
}

/// The cap of the proportional variants: the default's.
const PROP_MAX: Duration = ::tickless::runtime::DEFAULT_SLACK_MAX;

/// Every contender, by name.
pub const ALL: &[(&str, Contender)] = &[
    ("tickless", Contender::Tickless(tickless::Config::DEFAULT)),
    (
        "tickless_spin50us",
        Contender::Tickless(tickless::Config {
            spin: Some(SPIN),
            ..tickless::Config::DEFAULT
        }),
    ),
    (
        "tickless_nogov",
        Contender::Tickless(tickless::Config {
            governor: Some(false),
            ..tickless::Config::DEFAULT
        }),
    ),
    // Cross-core ping-pong with threads not pinned (the builder's default): the governor's
    // case where the kernel may wake a core onto the other's CPU.
    (
        "tickless_unpinned",
        Contender::Tickless(tickless::Config {
            unpinned: true,
            ..tickless::Config::DEFAULT
        }),
    ),
    (
        "tickless_unpinned_nogov",
        Contender::Tickless(tickless::Config {
            unpinned: true,
            governor: Some(false),
            ..tickless::Config::DEFAULT
        }),
    ),
    (
        "tickless_unpinned_spin50us",
        Contender::Tickless(tickless::Config {
            unpinned: true,
            spin: Some(SPIN),
            ..tickless::Config::DEFAULT
        }),
    ),
    ("tickless_slack1ms", fixed_slack(SLACK)),
    // The frontier of timer_churn: fixed default slacks, and shares other than the default's.
    ("tickless_slack0", fixed_slack(Duration::ZERO)),
    ("tickless_slack10us", fixed_slack(Duration::from_micros(10))),
    (
        "tickless_slack100us",
        fixed_slack(Duration::from_micros(100)),
    ),
    ("tickless_prop4", proportional_slack(4, PROP_MAX)),
    ("tickless_prop16", proportional_slack(16, PROP_MAX)),
    ("tickless_prop64", proportional_slack(64, PROP_MAX)),
    (
        "tickless_knee8ms",
        Contender::Tickless(tickless::Config {
            slack: Some(tickless::Slack::Growing(Duration::from_millis(8), PROP_MAX)),
            ..tickless::Config::DEFAULT
        }),
    ),
    (
        "tickless_eager",
        Contender::Tickless(tickless::Config {
            policy: Some(RearmPolicy::Eager),
            ..tickless::Config::DEFAULT
        }),
    ),
    (
        "tickless_onidle",
        Contender::Tickless(tickless::Config {
            policy: Some(RearmPolicy::OnIdle),
            ..tickless::Config::DEFAULT
        }),
    ),
    (
        "tickless_lazy",
        Contender::Tickless(tickless::Config {
            policy: Some(RearmPolicy::Lazy),
            ..tickless::Config::DEFAULT
        }),
    ),
    // The clock event device without a timerfd: epoll_pwait2's own timeout.
    (
        "tickless_epoll",
        Contender::Tickless(tickless::Config {
            device: Some(::tickless::ClockDevice::Epoll),
            ..tickless::Config::DEFAULT
        }),
    ),
    (
        "tickless_epoll_onidle",
        Contender::Tickless(tickless::Config {
            device: Some(::tickless::ClockDevice::Epoll),
            policy: Some(RearmPolicy::OnIdle),
            ..tickless::Config::DEFAULT
        }),
    ),
    // No wakeup lead: the device is programmed for the end of the window itself.
    (
        "tickless_nolead",
        Contender::Tickless(tickless::Config {
            lead_max: Some(Duration::ZERO),
            ..tickless::Config::DEFAULT
        }),
    ),
    // `server_tokio_shape`'s service on tickless's own shape: a listener per core.
    ("tickless_per_core", Contender::TicklessPerCore),
    // No work stealing (`Builder::steal_after(None)`): a task stays where it was placed.
    (
        "tickless_nosteal",
        Contender::Tickless(tickless::Config {
            steal_after: Some(None),
            ..tickless::Config::DEFAULT
        }),
    ),
    ("tokio", Contender::Tokio),
    ("smol", Contender::Smol),
    ("monoio_legacy", Contender::Monoio(monoio::Driver::Legacy)),
    ("monoio_uring", Contender::Monoio(monoio::Driver::Uring)),
    ("threads", Contender::Threads),
    ("floor", Contender::Floor),
];

/// The error of a workload a contender has no way to run (a baseline without timers).
fn unsupported(what: &str, c: &Contender) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{} does not run {what}", c.name()),
    )
}

impl Contender {
    /// The contender called `name`.
    pub fn named(name: &str) -> Option<Contender> {
        ALL.iter().find(|(n, _)| *n == name).map(|&(_, c)| c)
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        ALL.iter()
            .find(|(_, c)| c == self)
            .map_or("tickless_custom", |(n, _)| n)
    }

    /// Whether it can run here at all (io_uring may be disabled); the reason if not.
    ///
    /// # Errors
    ///
    /// Why it cannot.
    pub fn available(&self) -> io::Result<()> {
        match self {
            Contender::Monoio(d) => crate::workload::on_fresh_thread(|| monoio::available(*d)),
            _ => Ok(()),
        }
    }

    /// Pipe ping-pong.
    ///
    /// # Errors
    ///
    /// The runtime, pinning or the pipes failed.
    pub fn pingpong(&self, plan: &Plan) -> io::Result<Run> {
        match self {
            Contender::Tickless(cfg) => tickless::pingpong(cfg, plan),
            Contender::Tokio => tokio::pingpong(plan),
            Contender::Smol => smol::pingpong(plan),
            Contender::Monoio(d) => monoio::pingpong(*d, plan),
            Contender::Threads => blocking::threads(plan),
            Contender::Floor => blocking::floor(plan),
            Contender::TicklessPerCore => Err(unsupported("ping-pong", self)),
        }
    }

    /// `sleep_precision`: the lateness of each series of sleeps.
    ///
    /// # Errors
    ///
    /// The runtime or pinning failed, or the contender has no timers (`floor`).
    pub fn sleeps(&self, plan: &SleepPlan) -> io::Result<Vec<Lateness>> {
        match self {
            Contender::Tickless(cfg) => tickless::sleeps(cfg, plan),
            Contender::Tokio => tokio::sleeps(plan),
            Contender::Smol => smol::sleeps(plan),
            Contender::Monoio(d) => monoio::sleeps(*d, plan),
            Contender::Threads => blocking::sleeps(plan),
            Contender::Floor | Contender::TicklessPerCore => Err(unsupported("sleeps", self)),
        }
    }

    /// `idle`.
    ///
    /// # Errors
    ///
    /// The runtime, pinning or `/proc` failed, or the contender is a baseline.
    pub fn idle(&self, plan: IdlePlan) -> io::Result<IdleResult> {
        match self {
            Contender::Tickless(cfg) => tickless::idle(cfg, plan),
            Contender::Tokio => tokio::idle(plan),
            Contender::Smol => smol::idle(plan),
            Contender::Monoio(d) => monoio::idle(*d, plan),
            Contender::Threads | Contender::Floor | Contender::TicklessPerCore => {
                Err(unsupported("idle", self))
            }
        }
    }

    /// `timer_churn`.
    ///
    /// # Errors
    ///
    /// The runtime, pinning, `/proc` or `getrusage` failed, or the contender is a baseline.
    pub fn churn(&self, plan: ChurnPlan) -> io::Result<ChurnResult> {
        match self {
            Contender::Tickless(cfg) => tickless::churn(cfg, plan),
            Contender::Tokio => tokio::churn(plan),
            Contender::Smol => smol::churn(plan),
            Contender::Monoio(d) => monoio::churn(*d, plan),
            Contender::Threads | Contender::Floor | Contender::TicklessPerCore => {
                Err(unsupported("timer_churn", self))
            }
        }
    }

    /// `server_tokio_shape`: the key-value server on this contender, loaded by the client
    /// process `client(args)` makes.
    ///
    /// # Errors
    ///
    /// The runtime, the server or the client failed, or the contender runs no such server.
    pub fn server(
        &self,
        plan: &server::Plan,
        client: impl FnOnce(&[String]) -> io::Result<Command> + Send,
    ) -> io::Result<server::Measured> {
        match self {
            Contender::Tickless(cfg) => tickless::server_tokio_shape(cfg, plan, client),
            Contender::TicklessPerCore => tickless::server_per_core(plan, client),
            Contender::Tokio => tokio::server_tokio_shape(plan, client),
            _ => Err(unsupported("server_tokio_shape", self)),
        }
    }

    /// Whether it is tickless (its cores say where each connection runs).
    pub fn is_tickless(&self) -> bool {
        matches!(self, Contender::Tickless(_) | Contender::TicklessPerCore)
    }
}
