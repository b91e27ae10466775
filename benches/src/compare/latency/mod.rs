//! The `latency` workload: each server shape on tickless and on tokio, loaded open-loop at
//! fixed fractions of tokio's closed-loop maximum, on dedicated CPUs (server on one, the
//! generator on another) and on shared ones.
//!
//! For each group of servers (one shape on both runtimes, tokio first, whose maximum sets the
//! loads; on shared CPUs also tickless with one core, `runtime=tickless_1core`, to tell
//! whether the placement's cores serve at least as well as one) and placement, every member
//! gets a fresh server process at once (`compare __child
//! latency_server <shape> <runtime> cores=N [cpu=K]`, which prints `listening=<addr>` and
//! serves until its standard input closes; the ones not being loaded sleep), and the generator
//! (`load::gen`, on a thread of this process) measures the members in turn at each step, each
//! step `repeats` times (3; 1 in smoke runs), the order rotating with each run, so that a busy
//! spell of a shared machine falls on every runtime alike; each line is the run whose p99 is
//! the median of the step's (`runs=`):
//!
//! 1. the closed-loop maximum (`load=closed`): 64 connections, each sending as soon as it has
//!    its answer;
//! 2. the unloaded median (`load=unloaded`): a low rate, for the ZygOS figure;
//! 3. p50, p99 and p99.9 at each fraction of tokio's maximum (`load=0.25` ...), the requests on
//!    a Poisson schedule, each timed from its scheduled send.
//!
//! The server's CPU per request is its process's utime + stime (`/proc/<pid>/stat`) over the
//! recorded window, per answer in it; `server_waited` and `gen_waited` are the shares of the
//! window the server's threads and the generator's thread spent runnable but waiting for a CPU
//! (`schedstat`, see `procstat.rs`): a point where either is more than a few thousandths
//! measured the machine's other processes as much as the runtime (a 1 ms wait delays every
//! request that comes during it). Prints, each member's lines together,
//! `workload=latency shape=<s> cpus=<dedicated|shared> load=<f> runtime=<r> p50_us= p99_us=
//! p999_us= achieved_rps= cpu_us_per_req= server_waited= gen_waited= runs= offered_rps=
//! late_share= send_late_p99_us= unanswered=`, then per runtime the ZygOS figure
//! (`workload=latency_zygos ... zygos_load=`: the highest measured load up to which p99 stays
//! under 10x the unloaded median), and writes `benches/results/latency_<group>_<cpus>.svg`;
//! a note sets tickless on the placement's cores against `tickless_1core` (closed-loop
//! requests/s at least its, p99 at 0.5 at most its).

mod driver;
mod lines;
mod server;

use std::io;
use std::time::Duration;

use super::plan::Size;
use crate::load::plot;
use crate::load::proto::Protocol;
use driver::measure_group;

pub use lines::zygos_load;
pub use server::{serve_main, SERVER};

/// A server shape and the runtimes it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// "Hello, world!" over HTTP/1.1: `tickless_http::serve` and hyper-util's server on tokio.
    HttpHello,
    /// `server_tokio_shape`'s key-value server, one listener and a task per connection.
    KvTokioShape,
    /// The same handler under tickless's `serve_per_core`.
    KvPerCore,
}

impl Shape {
    /// Its name in the output.
    pub fn name(self) -> &'static str {
        match self {
            Shape::HttpHello => "http_hello",
            Shape::KvTokioShape => "kv_tokio_shape",
            Shape::KvPerCore => "kv_per_core",
        }
    }

    fn named(name: &str) -> Option<Shape> {
        [Shape::HttpHello, Shape::KvTokioShape, Shape::KvPerCore]
            .into_iter()
            .find(|s| s.name() == name)
    }

    fn protocol(self) -> Protocol {
        match self {
            Shape::HttpHello => Protocol::Http { path: "/".into() },
            Shape::KvTokioShape | Shape::KvPerCore => Protocol::KeyValue,
        }
    }
}

/// A server of a group: a shape on a runtime, and the name its lines carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contender {
    /// The server's shape.
    pub shape: Shape,
    /// The runtime it runs on (`tokio` or `tickless`).
    pub runtime: &'static str,
    /// Its name on the lines (`runtime=`) and the chart.
    pub name: &'static str,
    /// Cores (workers) whatever the placement's; `None`: the placement's.
    pub cores: Option<usize>,
}

impl Contender {
    /// On the placement's cores, named after its runtime.
    const fn of(shape: Shape, runtime: &'static str) -> Contender {
        Contender {
            shape,
            runtime,
            name: runtime,
            cores: None,
        }
    }

    /// Its cores on `placement`; `None` where it is not measured there: a contender with
    /// cores of its own only where the placement gives another count (on dedicated CPUs every
    /// server has one core already).
    fn cores_on(&self, placement: &Placement) -> Option<usize> {
        match self.cores {
            None => Some(placement.cores()),
            Some(n) if n == placement.cores() => None,
            Some(n) => Some(n),
        }
    }
}

/// tickless with one core, measured beside the placement's cores on shared CPUs: whether two
/// cores serve at least as well as one.
const fn one_core(shape: Shape) -> Contender {
    Contender {
        shape,
        runtime: "tickless",
        name: ONE_CORE,
        cores: Some(1),
    }
}

/// The one-core tickless contender's name on the lines.
pub const ONE_CORE: &str = "tickless_1core";

/// Servers measured together, on one chart: the first is tokio's, whose closed-loop maximum
/// sets every member's loads.
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// The chart's name.
    pub name: &'static str,
    /// tokio's first.
    pub members: &'static [Contender],
}

/// The HTTP group.
const HTTP: Group = Group {
    name: "http_hello",
    members: &[
        Contender::of(Shape::HttpHello, "tokio"),
        Contender::of(Shape::HttpHello, "tickless"),
        one_core(Shape::HttpHello),
    ],
};

/// The key-value group: the tokio shape on both runtimes (and tickless on one core) and
/// tickless's own shape.
const KV: Group = Group {
    name: "kv",
    members: &[
        Contender::of(Shape::KvTokioShape, "tokio"),
        Contender::of(Shape::KvTokioShape, "tickless"),
        one_core(Shape::KvTokioShape),
        Contender::of(Shape::KvPerCore, "tickless"),
    ],
};

/// Where the server and the generator run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// The server pinned to one CPU with one core (one tokio worker), the generator pinned to
    /// another.
    Dedicated {
        /// The server's CPU.
        server: usize,
        /// The generator's CPU.
        client: usize,
    },
    /// Neither pinned; the server has a core (a worker) per CPU of the process.
    Shared {
        /// The server's cores or workers.
        cores: usize,
    },
}

impl Placement {
    fn name(&self) -> &'static str {
        match self {
            Placement::Dedicated { .. } => "dedicated",
            Placement::Shared { .. } => "shared",
        }
    }

    fn cores(&self) -> usize {
        match self {
            Placement::Dedicated { .. } => 1,
            Placement::Shared { cores } => *cores,
        }
    }

    fn text(&self) -> String {
        match self {
            Placement::Dedicated { server, client } => format!(
                "dedicated: server on CPU {server} (1 core / 1 worker), generator on CPU {client}"
            ),
            Placement::Shared { cores } => {
                format!("shared: server ({cores} cores / {cores} workers) and generator unpinned")
            }
        }
    }
}

/// The workload's sizes at one run length.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Groups measured.
    pub groups: Vec<Group>,
    /// Whether the shared placement is measured too.
    pub shared: bool,
    /// Fractions of tokio's maximum.
    pub fractions: Vec<f64>,
    /// Closed loop: warm-up and window.
    pub closed: (Duration, Duration),
    /// Each open-loop point: warm-up and window.
    pub point: (Duration, Duration),
    /// Highest rate of the unloaded point, requests per second.
    pub unloaded_rate: f64,
    /// A cap on every open-loop rate (smoke: a few hundred requests a point).
    pub rate_cap: Option<f64>,
    /// Connections.
    pub conns: usize,
    /// Runs of each step per member (closed loop, unloaded, each load), the members taking
    /// turns; a line reports the run whose p99 is the median.
    pub repeats: usize,
}

impl Sizes {
    /// The sizes of `size`.
    pub fn of(size: Size) -> Sizes {
        let ms = Duration::from_millis;
        let fractions = vec![0.25, 0.5, 0.75, 0.9];
        match size {
            Size::Full => Sizes {
                groups: vec![HTTP, KV],
                shared: true,
                fractions,
                closed: (ms(500), ms(1_500)),
                point: (ms(500), ms(2_000)),
                unloaded_rate: 1_000.0,
                rate_cap: None,
                conns: 64,
                repeats: 3,
            },
            Size::Quick => Sizes {
                groups: vec![HTTP, KV],
                shared: true,
                fractions,
                closed: (ms(200), ms(500)),
                point: (ms(200), ms(500)),
                unloaded_rate: 1_000.0,
                rate_cap: None,
                conns: 64,
                repeats: 3,
            },
            Size::Smoke => Sizes {
                groups: vec![HTTP],
                shared: false,
                fractions: vec![0.5],
                closed: (ms(50), ms(150)),
                point: (ms(100), ms(300)),
                unloaded_rate: 200.0,
                rate_cap: Some(1_000.0),
                conns: 64,
                repeats: 1,
            },
        }
    }
}

/// The placements this machine allows: dedicated where the process may run on two CPUs.
fn placements(shared: bool) -> io::Result<(Vec<Placement>, Option<String>)> {
    let cpus = crate::sys::allowed_cpus()?;
    let mut out = Vec::new();
    let mut note = None;
    if cpus.len() >= 2 {
        out.push(Placement::Dedicated {
            server: cpus[0],
            client: cpus[1],
        });
    } else {
        note = Some(format!(
            "latency: dedicated CPUs skipped: the process may run on {cpus:?}"
        ));
    }
    if shared || out.is_empty() {
        out.push(Placement::Shared { cores: cpus.len() });
    }
    Ok((out, note))
}

/// What the workload printed and how many of its measurements failed.
#[derive(Debug, Default)]
pub struct Report {
    /// Result lines, in `compare`'s format.
    pub lines: Vec<String>,
    /// Notes (`# note:` lines).
    pub notes: Vec<String>,
    /// Failed measurements.
    pub failed: usize,
    /// The largest share of a point's requests the generator sent over 1 ms late.
    pub worst_late: f64,
    /// The open-loop points where the server or the generator waited for a CPU more than
    /// [`WAITED`] of the window, named `shape runtime cpus load (server, generator)`.
    pub waited: Vec<String>,
    /// Open-loop points measured.
    pub points: usize,
}

/// The share of a window waiting for a CPU over which a point is named as disturbed: 5 ms a
/// second, enough to hold up more than the 1% of requests whose latency p99 reads when the
/// waits come a few ms at a time (a scheduler slice), as they do on a busy machine.
pub const WAITED: f64 = 0.005;

/// Runs the workload; `plots` is the folder for the charts (`None`: none written).
pub fn run(size: Size, plots: Option<&std::path::Path>) -> Report {
    let sizes = Sizes::of(size);
    let mut report = Report::default();
    let (placements, note) = match placements(sizes.shared) {
        Ok(p) => p,
        Err(e) => {
            report.notes.push(format!("latency skipped: {e}"));
            return report;
        }
    };
    report.notes.extend(note);
    // As the other workloads: each server's run waits for a quiet machine (within a budget),
    // and the runs others disturbed anyway are named.
    let mut patience = super::quiet::Patience::new(match size {
        Size::Full => Duration::from_secs(300),
        Size::Quick => Duration::from_secs(120),
        Size::Smoke => Duration::ZERO,
    });
    let mut disturbed: Vec<String> = Vec::new();
    report.notes.push(format!(
        "latency: {} connections, one generator thread (epoll), Poisson arrivals, each request \
         timed from its scheduled send; closed-loop maximum over {:?}, each load over {:?} after \
         {:?} of warm-up, each step run {} times per runtime, the runtimes taking turns (each \
         line the run with the median p99); unloaded median at {} requests/s at most; {}",
        sizes.conns,
        sizes.closed.1,
        sizes.point.1,
        sizes.point.0,
        sizes.repeats,
        sizes.unloaded_rate,
        placements
            .iter()
            .map(Placement::text)
            .collect::<Vec<_>>()
            .join("; ")
    ));
    for group in &sizes.groups {
        for placement in &placements {
            let title = format!("latency {} ({})", group.name, placement.name());
            eprintln!("{title}");
            if size != Size::Smoke {
                patience.wait_quiet();
            }
            let window = super::quiet::Window::start();
            let series = measure_group(&sizes, group, placement, &mut report);
            let others = window.and_then(|w| w.others()).unwrap_or(0.0);
            if others > super::quiet::MAX_OTHERS && size != Size::Smoke {
                disturbed.push(format!("{} {} ({others:.2})", group.name, placement.name()));
            }
            if let (Some(dir), false) = (plots, series.is_empty()) {
                let path = dir.join(format!("latency_{}_{}.svg", group.name, placement.name()));
                let title = format!(
                    "{}: latency against load, {} CPUs (p99 solid, p50 dashed)",
                    group.name,
                    placement.name()
                );
                if let Err(e) = std::fs::write(&path, plot::svg(&title, &series)) {
                    report
                        .notes
                        .push(format!("latency: cannot write {}: {e}", path.display()));
                }
            }
        }
    }
    if !disturbed.is_empty() {
        report.notes.push(format!(
            "latency: other processes used more than {:.2} CPUs during {} of the groups' runs \
             (CPUs used on average in brackets; treat those figures as rough, and see each \
             line's server_waited and gen_waited): {}",
            super::quiet::MAX_OTHERS,
            disturbed.len(),
            disturbed.join(", ")
        ));
    }
    if !report.waited.is_empty() {
        report.notes.push(format!(
            "latency: {} of {} loaded points waited for a CPU more than {WAITED} of their window \
             (server, generator: server_waited and gen_waited on each line); their p99 and \
             p99.9 are the machine's other processes as much as the runtime's: {}",
            report.waited.len(),
            report.points,
            report.waited.join(", ")
        ));
    }
    if !report.lines.is_empty() {
        report.notes.push(format!(
            "latency: did the generator keep up? At worst it sent {:.1}% of a point's requests \
             more than 1 ms after they were ready{}",
            100.0 * report.worst_late,
            if report.worst_late > 0.01 {
                " (late_share on each line): a point over 1% measured the client (its CPU \
                 taken by others, say) as much as the server"
            } else {
                ""
            }
        ));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_starts_with_tokio() {
        for g in [HTTP, KV] {
            assert_eq!(g.members[0].runtime, "tokio", "{}", g.name);
            assert_eq!(g.members[0].cores, None, "{}", g.name);
        }
    }

    #[test]
    fn the_one_core_member_runs_only_where_the_placement_has_more_cores() {
        let dedicated = Placement::Dedicated {
            server: 0,
            client: 1,
        };
        let on = |g: Group, p: &Placement| -> Vec<(&str, &str, usize)> {
            g.members
                .iter()
                .filter_map(|c| Some((c.shape.name(), c.name, c.cores_on(p)?)))
                .collect()
        };
        assert_eq!(
            on(HTTP, &Placement::Shared { cores: 2 }),
            [
                ("http_hello", "tokio", 2),
                ("http_hello", "tickless", 2),
                ("http_hello", ONE_CORE, 1),
            ]
        );
        assert_eq!(
            on(KV, &Placement::Shared { cores: 4 }),
            [
                ("kv_tokio_shape", "tokio", 4),
                ("kv_tokio_shape", "tickless", 4),
                ("kv_tokio_shape", ONE_CORE, 1),
                ("kv_per_core", "tickless", 4),
            ]
        );
        for p in [dedicated, Placement::Shared { cores: 1 }] {
            for g in [HTTP, KV] {
                let names: Vec<_> = on(g, &p).into_iter().map(|m| m.1).collect();
                assert!(!names.contains(&ONE_CORE), "{p:?}: {names:?}");
                assert_eq!(names.len(), g.members.len() - 1, "{p:?}");
            }
        }
        // Its server is tickless's, started with one core.
        let c = HTTP.members[2];
        assert_eq!((c.runtime, c.cores), ("tickless", Some(1)));
    }
}
