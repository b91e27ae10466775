//! A measurement's result and the lines that report it: the `workload=latency` line, the
//! ZygOS load, and the note that sets a runtime's cores against one core.

use super::{Placement, Shape};
use crate::compare::child::fmt_num;
use crate::compare::report::cores_text;
use crate::load::gen::Outcome;

/// One measurement's result.
pub(super) struct Point {
    pub(super) outcome: Outcome,
    /// Server CPU over the window, µs per answer in it.
    pub(super) cpu_us_per_req: Option<f64>,
    /// The share of the window the server's threads spent waiting for a CPU (summed over
    /// them): others' processes on its CPU, or its own threads crowding each other.
    pub(super) server_waited: Option<f64>,
    /// The share of the window the generator's thread spent waiting for a CPU.
    pub(super) gen_waited: Option<f64>,
    /// Runs of the same step this one is the median of (by p99).
    pub(super) runs: usize,
}

/// A result line.
pub(super) fn line(
    shape: Shape,
    placement: &Placement,
    load: &str,
    runtime: &str,
    p: &Point,
) -> String {
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

/// The note that sets `a` on `a_cores` against `b` on `b_cores` (`(a, a_cores, b, b_cores)`,
/// the same shape and runtime): `a`'s closed-loop requests/s over `b`'s (`rps`, target at
/// least 1) and its p99 at half tokio's maximum over `b`'s (`p99_half`, target at most 1).
pub(super) fn cores_note(
    shape: Shape,
    placement: &Placement,
    (a, a_cores, b, b_cores): (&str, usize, &str, usize),
    rps: (f64, f64),
    p99_half: (Option<f64>, Option<f64>),
) -> String {
    let judge = |ratio: f64, higher: bool| {
        if !ratio.is_finite() {
            return "not measured".to_string();
        }
        let met = if higher { ratio >= 1.0 } else { ratio <= 1.0 };
        let goal = if higher { "at least 1" } else { "at most 1" };
        format!(
            "{ratio:.2}x (target {goal}: {})",
            if met { "met" } else { "missed" }
        )
    };
    let p99 = match p99_half {
        (Some(a), Some(b)) => a / b,
        _ => f64::NAN,
    };
    format!(
        "latency: {} on {} CPUs, {} against {} ({a} / {b}): closed-loop requests/s {}, p99 at 0.5 \
         of tokio's maximum {}",
        shape.name(),
        placement.name(),
        cores_text(a_cores),
        cores_text(b_cores),
        judge(rps.0 / rps.1, true),
        judge(p99, false),
    )
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
    fn the_cores_note_judges_both_targets() {
        let shared = Placement::Shared { cores: 2 };
        let names = ("tickless", 2, "tickless_1core", 1);
        let note = cores_note(
            Shape::HttpHello,
            &shared,
            names,
            (91.0, 100.0),
            (Some(236.0), Some(100.0)),
        );
        assert_eq!(
            note,
            "latency: http_hello on shared CPUs, 2 cores against 1 core (tickless / \
             tickless_1core): closed-loop requests/s 0.91x (target at least 1: missed), p99 at \
             0.5 of tokio's maximum 2.36x (target at most 1: missed)"
        );
        let note = cores_note(
            Shape::KvTokioShape,
            &shared,
            names,
            (100.0, 100.0),
            (Some(90.0), None),
        );
        assert!(
            note.ends_with(
                "1.00x (target at least 1: met), p99 at 0.5 of tokio's maximum not measured"
            ),
            "{note}"
        );
    }
}
