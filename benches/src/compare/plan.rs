//! What `compare` runs: the workloads, their sizes at each run length, and which contenders
//! run which workload.

use std::time::Duration;

use crate::workload::pingpong::{self, Mode};
use crate::workload::server;
use crate::workload::timers::{ChurnPlan, IdlePlan, SleepPlan};

/// A workload of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Workload {
    /// Pipe ping-pong, both tasks on one core.
    PingpongSame,
    /// Pipe ping-pong, one side per core.
    PingpongCross,
    /// Same-core pipe ping-pong, every read under a 1 s timeout.
    PingpongTimeout,
    /// Sleeps of 100 µs, then of 1 ms, in a row.
    SleepPrecision,
    /// 10,000 tasks asleep for 60 s.
    Idle,
    /// 1,000 tasks looping on random 1-100 ms sleeps.
    TimerChurn,
    /// A key-value server written the tokio way (one listener, a task per connection) on
    /// tickless and tokio, and on tickless's `serve_per_core`, under a client's load.
    ServerTokioShape,
    /// The same under a skewed load: [`HOT`] of the connections carry about half the requests.
    ServerTokioShapeSkew,
    /// Open-loop latency at fixed fractions of tokio's maximum load, per server shape
    /// (`latency/`): run by the parent itself, not as jobs.
    Latency,
}

impl Workload {
    /// Every workload, in the order they are run and reported.
    pub const ALL: [Workload; 9] = [
        Workload::PingpongSame,
        Workload::PingpongCross,
        Workload::PingpongTimeout,
        Workload::SleepPrecision,
        Workload::Idle,
        Workload::TimerChurn,
        Workload::ServerTokioShape,
        Workload::ServerTokioShapeSkew,
        Workload::Latency,
    ];

    /// Its name in the output.
    pub fn name(self) -> &'static str {
        match self {
            Workload::PingpongSame => "pingpong_same",
            Workload::PingpongCross => "pingpong_cross",
            Workload::PingpongTimeout => "pingpong_timeout",
            Workload::SleepPrecision => "sleep_precision",
            Workload::Idle => "idle",
            Workload::TimerChurn => "timer_churn",
            Workload::ServerTokioShape => "server_tokio_shape",
            Workload::ServerTokioShapeSkew => "server_tokio_shape_skew",
            Workload::Latency => "latency",
        }
    }

    /// The workload called `name`.
    pub fn named(name: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == name)
    }

    /// The ping-pong mode, for ping-pong workloads.
    pub fn pingpong_mode(self) -> Option<Mode> {
        match self {
            Workload::PingpongSame => Some(Mode::Same),
            Workload::PingpongCross => Some(Mode::Cross),
            Workload::PingpongTimeout => Some(Mode::Timeout),
            _ => None,
        }
    }

    /// Who runs it, in report order.
    pub fn contenders(self) -> &'static [&'static str] {
        const RUNTIMES: [&str; 4] = ["tokio", "smol", "monoio_legacy", "monoio_uring"];
        match self {
            Workload::PingpongSame | Workload::PingpongTimeout => &[
                "tickless",
                RUNTIMES[0],
                RUNTIMES[1],
                RUNTIMES[2],
                RUNTIMES[3],
                "threads",
                "floor",
                "tickless_eager",
                "tickless_onidle",
                "tickless_lazy",
                "tickless_epoll",
                "tickless_nogov",
            ],
            Workload::PingpongCross => &[
                "tickless",
                "tickless_nogov",
                "tickless_spin50us",
                RUNTIMES[0],
                RUNTIMES[1],
                RUNTIMES[2],
                RUNTIMES[3],
                "threads",
                "floor",
                "tickless_eager",
                "tickless_onidle",
                "tickless_lazy",
                "tickless_unpinned",
                "tickless_unpinned_nogov",
                "tickless_unpinned_spin50us",
            ],
            Workload::SleepPrecision => &[
                "tickless",
                "tickless_slack0",
                "tickless_epoll",
                "tickless_nolead",
                RUNTIMES[0],
                RUNTIMES[1],
                RUNTIMES[2],
                RUNTIMES[3],
                "threads",
            ],
            Workload::Idle => &[
                "tickless",
                "tickless_nogov",
                RUNTIMES[0],
                RUNTIMES[1],
                RUNTIMES[2],
                RUNTIMES[3],
            ],
            Workload::TimerChurn => &[
                "tickless",
                "tickless_slack1ms",
                "tickless_slack0",
                "tickless_slack10us",
                "tickless_slack100us",
                "tickless_prop4",
                "tickless_prop16",
                "tickless_prop64",
                "tickless_knee8ms",
                "tickless_nogov",
                "tickless_spin50us",
                RUNTIMES[0],
                RUNTIMES[1],
                RUNTIMES[2],
                RUNTIMES[3],
                "tickless_eager",
                "tickless_onidle",
                "tickless_lazy",
                "tickless_epoll",
                "tickless_epoll_onidle",
                "tickless_nolead",
            ],
            // tokio here is its multi-thread runtime, as a tokio server runs; tickless without
            // work stealing last, to show what stealing changes.
            Workload::ServerTokioShape | Workload::ServerTokioShapeSkew => &[
                "tickless",
                RUNTIMES[0],
                "tickless_per_core",
                "tickless_nosteal",
            ],
            // Its servers and loads are `latency/`'s, run by the parent.
            Workload::Latency => &[],
        }
    }

    /// Whether it runs at each `--cores` count (the others run at fixed core counts).
    pub fn takes_cores(self) -> bool {
        self.server_hot().is_some()
    }

    /// For a key-value server workload, its hot connections (0: none); `None` for the others.
    pub fn server_hot(self) -> Option<usize> {
        match self {
            Workload::ServerTokioShape => Some(0),
            Workload::ServerTokioShapeSkew => Some(HOT),
            _ => None,
        }
    }
}

/// `server_tokio_shape_skew`'s hot connections, whatever the core count: 2 of 64 on two cores.
pub const HOT: usize = 2;

/// `server_tokio_shape`'s cores (tickless) and workers (tokio) when `--cores` is not given: the
/// two CPUs of the machine the targets are set for.
pub const DEFAULT_CORES: usize = 2;

/// How long the whole comparison runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// A few minutes: the sizes of the issue, 7 repetitions of ping-pong, 5 of the rest (CPU
    /// per timer fire is the noisiest figure on a virtual machine: one disturbed run in three
    /// moved a median by a third).
    Full,
    /// About a minute and a half (up to two minutes more waiting on a busy machine): smaller
    /// counts, 3 repetitions of ping-pong, 1 of the rest.
    Quick,
    /// A few seconds, tiny counts: proves every path runs (CI), measures nothing.
    Smoke,
}

/// The sizes of every workload at one run length.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Repetitions of each ping-pong measurement.
    pub pingpong_reps: usize,
    /// Repetitions of each timer workload's measurement.
    pub timer_reps: usize,
    /// Timed round trips, same-core (with and without timeout).
    pub rtts_same: u32,
    /// Timed round trips, cross-core.
    pub rtts_cross: u32,
    /// `sleep_precision`'s series.
    pub sleeps: SleepPlan,
    /// `idle`.
    pub idle: IdlePlan,
    /// `timer_churn`.
    pub churn: ChurnPlan,
    /// `server_tokio_shape`.
    pub server: ServerSizes,
    /// Round trips of the two traced runs of the syscall count; `None`: don't count.
    pub strace_rtts: Option<(u32, u32)>,
}

/// `server_tokio_shape` at one run length; the core count comes with each measurement.
#[derive(Debug, Clone, Copy)]
pub struct ServerSizes {
    /// Connections the client keeps busy, per server core: 32 (64 on two cores, as
    /// `http_load.sh`'s wrk).
    pub conns_per_core: usize,
    /// Load before the window.
    pub warmup: Duration,
    /// The window.
    pub window: Duration,
}

impl ServerSizes {
    /// The plan at `cores` cores with `hot` hot connections (fewer than the connections:
    /// at most all but one): the client runs a thread per server core.
    pub fn plan(&self, cores: usize, hot: usize) -> server::Plan {
        let conns = self.conns_per_core * cores;
        server::Plan {
            cores,
            conns,
            client_threads: cores,
            warmup: self.warmup,
            window: self.window,
            hot: hot.min(conns.saturating_sub(1)),
        }
    }
}

impl Size {
    /// Its sizes.
    pub fn sizes(self) -> Sizes {
        let churn = |tasks, warmup_ms, window_ms| ChurnPlan {
            tasks,
            min: Duration::from_millis(1),
            max: Duration::from_millis(100),
            warmup: Duration::from_millis(warmup_ms),
            window: Duration::from_millis(window_ms),
        };
        let server = |conns_per_core, warmup_ms, window_ms| ServerSizes {
            conns_per_core,
            warmup: Duration::from_millis(warmup_ms),
            window: Duration::from_millis(window_ms),
        };
        let sleeps = |n100, n1ms| SleepPlan {
            series: vec![
                (Duration::from_micros(100), n100),
                (Duration::from_millis(1), n1ms),
            ],
        };
        match self {
            Size::Full => Sizes {
                pingpong_reps: 7,
                timer_reps: 5,
                rtts_same: 60_000,
                rtts_cross: 20_000,
                sleeps: sleeps(2_000, 500),
                idle: IdlePlan {
                    tasks: 10_000,
                    window: Duration::from_secs(2),
                },
                churn: churn(1_000, 500, 2_000),
                server: server(32, 1_000, 3_000),
                strace_rtts: Some((500, 2_500)),
            },
            Size::Quick => Sizes {
                pingpong_reps: 3,
                timer_reps: 1,
                rtts_same: 25_000,
                rtts_cross: 8_000,
                sleeps: sleeps(500, 100),
                idle: IdlePlan {
                    tasks: 10_000,
                    window: Duration::from_secs(1),
                },
                churn: churn(1_000, 300, 1_000),
                server: server(32, 500, 1_500),
                strace_rtts: Some((200, 1_000)),
            },
            Size::Smoke => Sizes {
                pingpong_reps: 1,
                timer_reps: 1,
                rtts_same: 200,
                rtts_cross: 100,
                sleeps: sleeps(20, 5),
                idle: IdlePlan {
                    tasks: 10_000,
                    window: Duration::from_millis(100),
                },
                churn: churn(100, 20, 100),
                server: server(2, 20, 100),
                strace_rtts: Some((10, 30)),
            },
        }
    }
}

impl Sizes {
    /// The ping-pong plan of `mode`, with `rtts` timed round trips (`None`: this size's).
    pub fn pingpong(&self, mode: Mode, rtts: Option<u32>) -> pingpong::Plan {
        let rtts = rtts.unwrap_or(match mode {
            Mode::Cross => self.rtts_cross,
            Mode::Same | Mode::Timeout | Mode::Paired => self.rtts_same,
        });
        pingpong::Plan {
            mode,
            warmup: (rtts / 10).max(10),
            rtts,
        }
    }

    /// How often each measurement runs, in words: `each ping-pong 3 times, the rest once`.
    pub fn reps_text(&self) -> String {
        let times = |n: usize| match n {
            1 => "once".to_string(),
            2 => "twice".to_string(),
            n => format!("{n} times"),
        };
        if self.pingpong_reps == self.timer_reps {
            return format!("each {}", times(self.pingpong_reps));
        }
        format!(
            "each ping-pong {}, the rest {}",
            times(self.pingpong_reps),
            times(self.timer_reps)
        )
    }

    /// Repetitions of `w`'s measurements.
    pub fn reps(&self, w: Workload) -> usize {
        if w.pingpong_mode().is_some() {
            self.pingpong_reps
        } else {
            self.timer_reps
        }
    }
}
