//! The workload's driver: one measurement of a server, and a group's members measured in turn
//! at each step, the median run of each step kept and the members' lines gathered.

use std::io;
use std::thread;
use std::time::Duration;

use super::lines::{cores_note, line, zygos_load, Point};
use super::server::{Server, Usage};
use super::{Group, Placement, Report, Shape, Sizes, WAITED};
use crate::compare::child::fmt_num;
use crate::load::gen::{self, Mark, Pacing};
use crate::load::plot::Series;
use crate::load::proto::Protocol;
use crate::load::schedule::Arrivals;

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

/// One member of a group being measured: its server, and its lines and chart points so far.
struct Member {
    shape: Shape,
    /// The contender's name (`runtime=` on its lines).
    runtime: &'static str,
    /// The runtime serving it (`tickless` for `tickless_1core`).
    serving: &'static str,
    /// Its cores where they are its own rather than the placement's.
    own_cores: Option<usize>,
    server: Server,
    lines: Vec<String>,
    closed_rps: f64,
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
pub(super) fn measure_group(
    sizes: &Sizes,
    group: &Group,
    placement: &Placement,
    report: &mut Report,
) -> Vec<Series> {
    let mut members = Vec::new();
    for c in group.members {
        let Some(cores) = c.cores_on(placement) else {
            continue;
        };
        match Server::start(c.shape, c.runtime, cores, placement) {
            Ok(server) => members.push(Member {
                shape: c.shape,
                runtime: c.name,
                serving: c.runtime,
                own_cores: c.cores,
                server,
                lines: Vec::new(),
                closed_rps: f64::NAN,
                unloaded_p50: f64::NAN,
                points: Vec::new(),
                failed: None,
            }),
            Err(e) => fail(
                report,
                &format!("{} {}", c.shape.name(), c.name),
                placement,
                e,
            ),
        }
    }
    // tokio's maximum sets the loads: without it there is nothing to run the others at.
    if members.first().map(|m| m.runtime) != Some(group.members[0].name) {
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
            m.closed_rps = p.outcome.achieved_rps;
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
    report.notes.extend(compare_cores(&members, placement));
    finish(members, placement, report)
}

/// Each member with cores of its own against its twin on the placement's cores (the same
/// shape and runtime): the closed-loop maximum and p99 at half tokio's.
fn compare_cores(members: &[Member], placement: &Placement) -> Vec<String> {
    let half = |m: &Member| m.points.iter().find(|p| p.0 == 0.5).map(|p| p.2);
    let mut notes = Vec::new();
    for own in members.iter() {
        let Some(cores) = own.own_cores else { continue };
        let twin = members
            .iter()
            .find(|m| m.own_cores.is_none() && m.shape == own.shape && m.serving == own.serving);
        if let Some(twin) = twin {
            notes.push(cores_note(
                own.shape,
                placement,
                (twin.runtime, placement.cores(), own.runtime, cores),
                (twin.closed_rps, own.closed_rps),
                (half(twin), half(own)),
            ));
        }
    }
    notes
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_reports_its_median_run_by_p99() {
        assert_eq!(median_of(&[900.0, 150.0, 300.0]), 2);
        assert_eq!(median_of(&[5.0]), 0);
        assert_eq!(median_of(&[2.0, 1.0]), 0, "of two, the higher");
        assert_eq!(median_of(&[1.0, 7.0, 3.0, 9.0]), 1);
    }
}
