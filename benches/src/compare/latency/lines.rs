//! A measurement's result and the lines that report it: the `workload=latency` line and the
//! ZygOS load.

use super::{Placement, Shape};
use crate::compare::child::fmt_num;
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
}
