//! The `latency` workload: each server shape on tickless and on tokio, loaded open-loop at
//! fixed fractions of tokio's closed-loop maximum, on dedicated CPUs (server on one, the
//! generator on another) and on shared ones.
//!
//! For each group of servers (one shape on both runtimes, tokio first, whose maximum sets the
//! loads) and placement, every member gets a fresh server process at once (`compare __child
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
//! under 10x the unloaded median), and writes `benches/results/latency_<group>_<cpus>.svg`.

use std::io::{self, BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::thread;
use std::time::Duration;

use super::child::fmt_num;
use super::plan::Size;
use super::procstat;
use super::runner::child_command;
use crate::load::gen::{self, Mark, Outcome, Pacing};
use crate::load::plot::{self, Series};
use crate::load::proto::Protocol;
use crate::load::schedule::Arrivals;

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

/// Servers measured together, on one chart: the first is tokio's, whose closed-loop maximum
/// sets every member's loads.
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// The chart's name.
    pub name: &'static str,
    /// `(shape, runtime)`, tokio's first.
    pub members: &'static [(Shape, &'static str)],
}

/// The HTTP group.
const HTTP: Group = Group {
    name: "http_hello",
    members: &[(Shape::HttpHello, "tokio"), (Shape::HttpHello, "tickless")],
};

/// The key-value group: the tokio shape on both runtimes and tickless's own shape.
const KV: Group = Group {
    name: "kv",
    members: &[
        (Shape::KvTokioShape, "tokio"),
        (Shape::KvTokioShape, "tickless"),
        (Shape::KvPerCore, "tickless"),
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

/// A server process under test.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(shape: Shape, runtime: &str, placement: &Placement) -> io::Result<Server> {
        let mut args = vec![
            SERVER.to_string(),
            shape.name().into(),
            runtime.into(),
            format!("cores={}", placement.cores()),
        ];
        if let Placement::Dedicated { server, .. } = placement {
            args.push(format!("cpu={server}"));
        }
        let mut child = child_command(&[], &args)?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        BufReader::new(stdout).read_line(&mut line)?;
        let addr = line
            .trim()
            .strip_prefix("listening=")
            .and_then(|a| a.parse().ok());
        match addr {
            Some(addr) => Ok(Server { child, addr }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(io::Error::other(format!(
                    "the {} server on {runtime} did not start (said {line:?})",
                    shape.name()
                )))
            }
        }
    }

    /// Its CPU time so far (user + system, every thread), and the time its threads waited
    /// for a CPU so far.
    fn usage(&self) -> Usage {
        Usage {
            cpu: procstat::proc_cpu(self.child.id()),
            wait: procstat::proc_wait(self.child.id()),
            gen_wait: procstat::thread_wait(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.child.stdin.take()); // it exits when its standard input closes
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Readings at one end of a measurement's window (`None`: `/proc` could not say).
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    /// The server's CPU time.
    cpu: Option<Duration>,
    /// The time the server's threads waited for a CPU.
    wait: Option<Duration>,
    /// The time the generator's thread (the caller) waited for a CPU.
    gen_wait: Option<Duration>,
}

/// One measurement's result.
struct Point {
    outcome: Outcome,
    /// Server CPU over the window, µs per answer in it.
    cpu_us_per_req: Option<f64>,
    /// The share of the window the server's threads spent waiting for a CPU (summed over
    /// them): others' processes on its CPU, or its own threads crowding each other.
    server_waited: Option<f64>,
    /// The share of the window the generator's thread spent waiting for a CPU.
    gen_waited: Option<f64>,
    /// Runs of the same step this one is the median of (by p99).
    runs: usize,
}

/// Runs the generator against `server` on a thread of its own (pinned to the client CPU when
/// dedicated), the server's CPU read at the window's ends.
fn measure(
    server: &Server,
    placement: &Placement,
    protocol: &Protocol,
    conns: usize,
    pacing: Pacing,
    (warmup, window): (Duration, Duration),
    seed: u64,
) -> io::Result<Point> {
    let cfg = gen::Config {
        addr: server.addr,
        protocol: protocol.clone(),
        conns,
        pacing,
        warmup,
        window,
        seed,
        // On a CPU of its own the generator may spin before each send; shared, it sleeps to
        // within a few µs and leaves the CPU to the server.
        spin: match placement {
            Placement::Dedicated { .. } => Duration::from_micros(50),
            Placement::Shared { .. } => Duration::from_micros(5),
        },
        drain: Duration::from_secs(2),
    };
    let client = match placement {
        Placement::Dedicated { client, .. } => Some(*client),
        Placement::Shared { .. } => None,
    };
    let (mut before, mut after) = (Usage::default(), Usage::default());
    let outcome = thread::scope(|s| {
        thread::Builder::new()
            .name("load-gen".into())
            .spawn_scoped(s, || {
                if let Some(cpu) = client {
                    crate::sys::pin_current_thread(cpu)?;
                }
                gen::run(&cfg, &mut |m| match m {
                    Mark::Opens => before = server.usage(),
                    Mark::Closes => after = server.usage(),
                })
            })?
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })?;
    let spent = |b: Option<Duration>, a: Option<Duration>| Some(a?.saturating_sub(b?));
    let cpu_us_per_req = spent(before.cpu, after.cpu)
        .filter(|_| outcome.answered > 0)
        .map(|d| d.as_secs_f64() * 1e6 / outcome.achieved_rps / window.as_secs_f64());
    let share = |d: Duration| d.as_secs_f64() / window.as_secs_f64();
    Ok(Point {
        outcome,
        cpu_us_per_req,
        server_waited: spent(before.wait, after.wait).map(share),
        gen_waited: spent(before.gen_wait, after.gen_wait).map(share),
        runs: 1,
    })
}

/// A result line.
fn line(shape: Shape, placement: &Placement, load: &str, runtime: &str, p: &Point) -> String {
    let o = &p.outcome;
    let mut l = format!(
        "workload=latency shape={} cpus={} load={load} runtime={runtime} p50_us={} p99_us={} \
         p999_us={} achieved_rps={} cpu_us_per_req={} server_waited={} gen_waited={} runs={}",
        shape.name(),
        placement.name(),
        fmt_num(o.latency_us(0.5)),
        fmt_num(o.latency_us(0.99)),
        fmt_num(o.latency_us(0.999)),
        fmt_num(o.achieved_rps),
        p.cpu_us_per_req.map_or("nan".into(), fmt_num),
        p.server_waited.map_or("nan".into(), fmt_num),
        p.gen_waited.map_or("nan".into(), fmt_num),
        p.runs,
    );
    if o.offered_rps > 0.0 {
        l += &format!(
            " offered_rps={} late_share={} send_late_p99_us={} unanswered={}",
            fmt_num(o.offered_rps),
            fmt_num(o.late_share()),
            fmt_num(o.send_late.value_at_quantile(0.99) as f64 / 1_000.0),
            o.unanswered
        );
    }
    l
}

/// The highest of `points` (load, p99 µs), by increasing load, up to which p99 stays under
/// `limit_us`; 0 if the first is over.
pub fn zygos_load(points: &[(f64, f64)], limit_us: f64) -> f64 {
    points
        .iter()
        .take_while(|p| p.1 < limit_us)
        .last()
        .map_or(0.0, |p| p.0)
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

/// One member of a group being measured: its server, and its lines and chart points so far.
struct Member {
    shape: Shape,
    runtime: &'static str,
    server: Server,
    lines: Vec<String>,
    unloaded_p50: f64,
    /// (load, p50 µs, p99 µs).
    points: Vec<(f64, f64, f64)>,
    /// Why it stopped, if a measurement failed.
    failed: Option<io::Error>,
}

/// A group on one placement: every member's server started at once, and the members
/// measured in turn at each step (closed loop, unloaded, then each load), the order rotating
/// from one load to the next, so that a busy spell of the machine falls on the runtimes alike
/// rather than on whichever ran then. Prints each member's lines together, in the group's
/// order; returns the chart's series.
fn measure_group(
    sizes: &Sizes,
    group: &Group,
    placement: &Placement,
    report: &mut Report,
) -> Vec<Series> {
    let mut members = Vec::new();
    for &(shape, runtime) in group.members {
        match Server::start(shape, runtime, placement) {
            Ok(server) => members.push(Member {
                shape,
                runtime,
                server,
                lines: Vec::new(),
                unloaded_p50: f64::NAN,
                points: Vec::new(),
                failed: None,
            }),
            Err(e) => fail(report, &format!("{} {runtime}", shape.name()), placement, e),
        }
    }
    // tokio's maximum sets the loads: without it there is nothing to run the others at.
    if members.first().map(|m| m.runtime) != Some(group.members[0].1) {
        return Vec::new();
    }
    let mut turn = 0;
    let closed = step(
        &mut members,
        sizes,
        placement,
        Pacing::Closed,
        sizes.closed,
        1,
        &mut turn,
    );
    let mut tokio_max = None;
    for (m, p) in members.iter_mut().zip(closed) {
        if let Some(p) = p {
            m.lines
                .push(line(m.shape, placement, "closed", m.runtime, &p));
            tokio_max.get_or_insert(p.outcome.achieved_rps);
        }
    }
    let Some(max) = tokio_max.filter(|_| members[0].failed.is_none()) else {
        return finish(members, placement, report);
    };
    let cap = |r: f64| sizes.rate_cap.map_or(r, |c| r.min(c)).max(1.0);
    let open = |rate: f64| Pacing::Open {
        rate: cap(rate),
        arrivals: Arrivals::Poisson,
    };
    let unloaded_rate = sizes.unloaded_rate.min(0.02 * max).max(100.0);
    let unloaded = step(
        &mut members,
        sizes,
        placement,
        open(unloaded_rate),
        sizes.point,
        2,
        &mut turn,
    );
    for (m, p) in members.iter_mut().zip(unloaded) {
        if let Some(p) = p {
            m.lines
                .push(line(m.shape, placement, "unloaded", m.runtime, &p));
            m.unloaded_p50 = p.outcome.latency_us(0.5);
        }
    }
    for (i, &f) in sizes.fractions.iter().enumerate() {
        let seed = 3 + i as u64;
        let points = step(
            &mut members,
            sizes,
            placement,
            open(f * max),
            sizes.point,
            seed,
            &mut turn,
        );
        for (m, p) in members.iter_mut().zip(points) {
            let Some(p) = p else { continue };
            m.lines
                .push(line(m.shape, placement, &format!("{f}"), m.runtime, &p));
            m.points
                .push((f, p.outcome.latency_us(0.5), p.outcome.latency_us(0.99)));
            report.worst_late = report.worst_late.max(p.outcome.late_share());
            report.points += 1;
            let (server, gen) = (p.server_waited.unwrap_or(0.0), p.gen_waited.unwrap_or(0.0));
            if server > WAITED || gen > WAITED {
                report.waited.push(format!(
                    "{} {} {} {f} ({server:.3}, {gen:.3})",
                    m.shape.name(),
                    m.runtime,
                    placement.name()
                ));
            }
        }
    }
    finish(members, placement, report)
}

/// One step (the closed loop, the unloaded rate, or a load) run `sizes.repeats` times on every
/// member, the members in turn, the order rotating with each run (`turn` counts the runs of
/// the group). Returns, per member, its run whose p99 is the median of its runs (the higher
/// of two middle ones), `runs` set; `None` for a member that failed.
fn step(
    members: &mut [Member],
    sizes: &Sizes,
    placement: &Placement,
    pacing: Pacing,
    window: (Duration, Duration),
    seed: u64,
    turn: &mut usize,
) -> Vec<Option<Point>> {
    let n = members.len();
    let mut runs: Vec<Vec<Point>> = (0..n).map(|_| Vec::new()).collect();
    for r in 0..sizes.repeats.max(1) {
        for k in 0..n {
            let i = (*turn + k) % n;
            // Each repeat on a schedule of its own (the same for every member).
            let seed = seed + 1_000 * r as u64;
            if let Some(p) = members[i].measure(sizes, placement, pacing, window, seed) {
                runs[i].push(p);
            }
        }
        *turn += 1;
    }
    runs.into_iter()
        .zip(members.iter())
        .map(|(mut points, m)| {
            if m.failed.is_some() || points.is_empty() {
                return None;
            }
            let count = points.len();
            let p99s: Vec<f64> = points.iter().map(|p| p.outcome.latency_us(0.99)).collect();
            let mut median = points.swap_remove(median_of(&p99s));
            median.runs = count;
            Some(median)
        })
        .collect()
}

impl Member {
    /// One measurement, unless an earlier one failed; a failure stops the member.
    fn measure(
        &mut self,
        sizes: &Sizes,
        placement: &Placement,
        pacing: Pacing,
        window: (Duration, Duration),
        seed: u64,
    ) -> Option<Point> {
        if self.failed.is_some() {
            return None;
        }
        let protocol = self.shape.protocol();
        match measure(
            &self.server,
            placement,
            &protocol,
            sizes.conns,
            pacing,
            window,
            seed,
        ) {
            Ok(p) => Some(p),
            Err(e) => {
                self.failed = Some(e);
                None
            }
        }
    }
}

/// The index of the median of `values` (not empty); of two middle ones, the higher.
fn median_of(values: &[f64]) -> usize {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    order[values.len() / 2]
}

/// Counts and notes a member's failure.
fn fail(report: &mut Report, what: &str, placement: &Placement, e: io::Error) {
    report.failed += 1;
    let title = format!("latency {what} ({})", placement.name());
    eprintln!("{title} FAILED: {e}");
    report.notes.push(format!("{title} failed: {e}"));
}

/// The members' lines and ZygOS figures into the report, failures counted; the series.
fn finish(members: Vec<Member>, placement: &Placement, report: &mut Report) -> Vec<Series> {
    let mut series = Vec::new();
    for m in members {
        report.lines.extend(m.lines);
        if let Some(e) = m.failed {
            fail(
                report,
                &format!("{} {}", m.shape.name(), m.runtime),
                placement,
                e,
            );
            continue;
        }
        let base = m.unloaded_p50;
        let p99s: Vec<(f64, f64)> = m.points.iter().map(|p| (p.0, p.2)).collect();
        report.lines.push(format!(
            "workload=latency_zygos shape={} cpus={} runtime={} unloaded_p50_us={} \
             p99_limit_us={} zygos_load={}",
            m.shape.name(),
            placement.name(),
            m.runtime,
            fmt_num(base),
            fmt_num(10.0 * base),
            fmt_num(zygos_load(&p99s, 10.0 * base)),
        ));
        let name = if m.shape == Shape::KvPerCore {
            format!("{} serve_per_core", m.runtime)
        } else {
            m.runtime.to_string()
        };
        series.push(Series {
            name,
            points: m.points,
        });
    }
    series
}

/// The server child's subcommand: `compare __child latency_server <shape> <runtime> cores=N
/// [cpu=K]`.
pub const SERVER: &str = "latency_server";

/// The server child's main (`args` after [`SERVER`]): pins itself to `cpu` if given, serves
/// on `cores` cores or workers, prints `listening=<addr>`, and exits when its standard input
/// closes (the parent is done with it, or gone).
///
/// # Errors
///
/// Bad arguments, pinning, or the server failed.
pub fn serve_main(args: &[String]) -> io::Result<()> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("usage: {SERVER} <shape> <tokio|tickless> cores=N [cpu=K]; got {args:?}"),
        )
    };
    let [shape, runtime, rest @ ..] = args else {
        return Err(bad());
    };
    let shape = Shape::named(shape).ok_or_else(bad)?;
    let (mut cores, mut cpu) = (None, None);
    for a in rest {
        if let Some(n) = a.strip_prefix("cores=") {
            cores = Some(n.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(bad)?);
        } else if let Some(n) = a.strip_prefix("cpu=") {
            cpu = Some(n.parse::<usize>().map_err(|_| bad())?);
        } else {
            return Err(bad());
        }
    }
    let cores = cores.ok_or_else(bad)?;
    if let Some(cpu) = cpu {
        crate::sys::pin_current_thread(cpu)?; // every thread started from here inherits it
    }
    thread::Builder::new()
        .name("stdin-watch".into())
        .spawn(|| {
            // A `histograms` line asks for the tickless loop histograms so far (one line
            // back, `loop_histograms ...` or `loop_histograms off`), a `stats` line for its
            // counters (`stats ...` or `stats off`); the end of input stops.
            for line in io::stdin().lines() {
                let Ok(line) = line else { break };
                let answer = match line.trim() {
                    "histograms" => crate::rt::tickless::serving::loop_histograms()
                        .unwrap_or_else(|| "loop_histograms off".into()),
                    "stats" => {
                        crate::rt::tickless::serving::stats().unwrap_or_else(|| "stats off".into())
                    }
                    _ => continue,
                };
                let mut out = io::stdout().lock();
                let _ = writeln!(out, "{answer}");
                let _ = out.flush();
            }
            std::process::exit(0);
        })?;
    let listening = |addr: SocketAddr| {
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "listening={addr}");
        let _ = out.flush();
    };
    use crate::rt::{tickless::serving as tl, tokio::serving as tk};
    match (shape, runtime.as_str()) {
        (Shape::HttpHello, "tickless") => tl::http_hello(cores, listening),
        (Shape::HttpHello, "tokio") => tk::http_hello(cores, listening),
        (Shape::KvTokioShape, "tickless") => tl::kv_tokio_shape(cores, listening),
        (Shape::KvTokioShape, "tokio") => tk::kv_tokio_shape(cores, listening),
        (Shape::KvPerCore, "tickless") => tl::kv_per_core(cores, listening),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zygos_load_is_the_last_load_before_the_first_crossing() {
        let pts = [(0.25, 50.0), (0.5, 80.0), (0.75, 400.0), (0.9, 90.0)];
        assert_eq!(zygos_load(&pts, 100.0), 0.5, "a later dip does not count");
        assert_eq!(zygos_load(&pts, 1_000.0), 0.9);
        assert_eq!(zygos_load(&pts, 10.0), 0.0);
    }

    #[test]
    fn a_step_reports_its_median_run_by_p99() {
        assert_eq!(median_of(&[900.0, 150.0, 300.0]), 2);
        assert_eq!(median_of(&[5.0]), 0);
        assert_eq!(median_of(&[2.0, 1.0]), 0, "of two, the higher");
        assert_eq!(median_of(&[1.0, 7.0, 3.0, 9.0]), 1);
    }

    #[test]
    fn every_group_starts_with_tokio() {
        for g in [HTTP, KV] {
            assert_eq!(g.members[0].1, "tokio", "{}", g.name);
        }
    }
}
