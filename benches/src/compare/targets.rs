//! The targets of the benchmarks issue, judged on one run's results: met, or missed by how
//! much.

use std::fmt::Write as _;

use super::report::{human, Results};

/// A figure: its median, and the worst-to-best range over the runs (for a ratio `a / b`:
/// `a`'s min over `b`'s max to `a`'s max over `b`'s min).
#[derive(Debug, Clone, Copy)]
pub struct Figure {
    /// From the medians.
    pub median: f64,
    /// The lowest it could be, given the runs.
    pub lo: f64,
    /// The highest.
    pub hi: f64,
}

/// One target and what became of it.
#[derive(Debug, Clone)]
pub struct Target {
    /// What is aimed at.
    pub goal: String,
    /// The measured figure.
    pub measured: String,
    /// The range of the runs, as measured.
    pub range: String,
    /// `met ...`, `missed by ...` or `not measured`.
    pub verdict: String,
}

/// `value >= goal`, with the margin in percent of the goal.
fn at_least(goal: String, value: Option<Figure>, min: f64, show: impl Fn(f64) -> String) -> Target {
    judge(goal, value, show, |v| (v >= min, (v / min - 1.0) * 100.0))
}

/// `value <= goal` (`< goal` if `strict`), with the margin in percent of the goal (absolute
/// when the goal is zero).
fn at_most(
    goal: String,
    value: Option<Figure>,
    max: f64,
    strict: bool,
    show: impl Fn(f64) -> String,
) -> Target {
    judge(goal, value, show, |v| {
        let ok = if strict { v < max } else { v <= max };
        let margin = if max == 0.0 {
            -v
        } else {
            (1.0 - v / max) * 100.0
        };
        (ok, margin)
    })
}

fn judge(
    goal: String,
    value: Option<Figure>,
    show: impl Fn(f64) -> String,
    check: impl Fn(f64) -> (bool, f64),
) -> Target {
    let Some(f) = value else {
        return Target {
            goal,
            measured: "n/a".into(),
            range: String::new(),
            verdict: "not measured".into(),
        };
    };
    let v = f.median;
    let (ok, margin) = check(v);
    // Whether every run, worst to best, agrees with the median's verdict.
    let firm = check(f.lo).0 == ok && check(f.hi).0 == ok;
    let absolute = goal.contains("zero");
    let mut verdict = match (ok, absolute) {
        (true, true) => "met".to_string(),
        (false, true) => format!("missed by {}/s", human(-margin)),
        (true, false) => format!("met ({:.0}% margin)", margin.abs()),
        (false, false) => format!("missed by {:.0}%", margin.abs()),
    };
    if !firm {
        verdict += " (within the spread)";
    }
    Target {
        goal,
        measured: show(v),
        range: if f.lo == f.hi {
            String::new()
        } else {
            format!("{} to {}", show(f.lo), show(f.hi))
        },
        verdict,
    }
}

fn ratio(a: Option<Figure>, b: Option<Figure>) -> Option<Figure> {
    let (a, b) = (a?, b?);
    Some(Figure {
        median: a.median / b.median,
        lo: a.lo / b.hi,
        hi: a.hi / b.lo,
    })
}

fn x(v: f64) -> String {
    format!("{v:.2}x")
}

fn us(v: f64) -> String {
    format!("{} µs", human(v))
}

/// Judges every target of the issue.
pub fn evaluate(r: &Results) -> Vec<Target> {
    let m = |w: &str, rt: &str, labels: &str, metric: &str| {
        r.summary(w, rt, labels, metric)
            .map(|(median, lo, hi)| Figure { median, lo, hi })
    };
    let rtt = |w: &str, rt: &str| m(w, rt, "", "rtt_per_s");
    let churn = |rt: &str, metric: &str| m("timer_churn", rt, "", metric);
    let mut t = vec![
        at_least(
            "pingpong_same: tickless / tokio >= 1.25".into(),
            ratio(
                rtt("pingpong_same", "tickless"),
                rtt("pingpong_same", "tokio"),
            ),
            1.25,
            x,
        ),
        at_least(
            "pingpong_timeout: tickless keeps >= 0.98 of its untimed rate (paired, one process)"
                .into(),
            m("pingpong_timeout", "tickless", "", "keep_paired"),
            0.98,
            |v| format!("{v:.3}"),
        ),
        at_least(
            "pingpong_timeout: the same, from separate processes' medians".into(),
            ratio(
                rtt("pingpong_timeout", "tickless"),
                rtt("pingpong_same", "tickless"),
            ),
            0.98,
            |v| format!("{v:.3}"),
        ),
        at_most(
            "pingpong_timeout: tickless re-arms < 1 per 10,000 messages".into(),
            m("pingpong_timeout", "tickless", "", "rearms_per_msg"),
            1e-4,
            true,
            |v| format!("{} per msg", human(v)),
        ),
        at_least(
            "pingpong_cross: tickless / tokio >= 1".into(),
            ratio(
                rtt("pingpong_cross", "tickless"),
                rtt("pingpong_cross", "tokio"),
            ),
            1.0,
            x,
        ),
        at_least(
            "pingpong_cross: tickless / threads >= 0.9".into(),
            ratio(
                rtt("pingpong_cross", "tickless"),
                rtt("pingpong_cross", "threads"),
            ),
            0.9,
            x,
        ),
        at_least(
            "pingpong_cross: tickless (idle governor) / threads >= 10".into(),
            ratio(
                rtt("pingpong_cross", "tickless"),
                rtt("pingpong_cross", "threads"),
            ),
            10.0,
            x,
        ),
        at_most(
            "pingpong_cross: tickless CPU per round trip / governor off <= 1".into(),
            ratio(
                m("pingpong_cross", "tickless", "", "cpu_us_per_rtt"),
                m("pingpong_cross", "tickless_nogov", "", "cpu_us_per_rtt"),
            ),
            1.0,
            false,
            x,
        ),
        at_least(
            "pingpong_cross: tickless_spin50us / threads >= 2".into(),
            ratio(
                rtt("pingpong_cross", "tickless_spin50us"),
                rtt("pingpong_cross", "threads"),
            ),
            2.0,
            x,
        ),
        at_most(
            "sleep_precision 100 µs: tickless late p50 <= 10 µs".into(),
            m("sleep_precision", "tickless", "sleep=100us", "late_p50_us"),
            10.0,
            false,
            us,
        ),
        at_most(
            "sleep_precision 100 µs: tickless late p99 <= 25 µs".into(),
            m("sleep_precision", "tickless", "sleep=100us", "late_p99_us"),
            25.0,
            false,
            us,
        ),
        at_most(
            "idle: tickless wakeups per second zero".into(),
            m("idle", "tickless", "", "wakeups_per_s"),
            0.0,
            false,
            |v| format!("{}/s", human(v)),
        ),
        at_most(
            "timer_churn defaults: tickless CPU per fire <= tokio's".into(),
            ratio(
                churn("tickless", "cpu_us_per_fire"),
                churn("tokio", "cpu_us_per_fire"),
            ),
            1.0,
            false,
            x,
        ),
        at_most(
            "timer_churn defaults: tickless late p50 <= 0.5x tokio's".into(),
            ratio(
                churn("tickless", "late_p50_us"),
                churn("tokio", "late_p50_us"),
            ),
            0.5,
            false,
            x,
        ),
    ];
    for (metric, what) in [
        ("wakeups_per_s", "wakeups per second"),
        ("cpu_us_per_fire", "CPU per fire"),
        ("late_p50_us", "late p50"),
        ("late_p99_us", "late p99"),
    ] {
        t.push(at_most(
            format!("timer_churn 1 ms slack: tickless {what} <= tokio's"),
            ratio(churn("tickless_slack1ms", metric), churn("tokio", metric)),
            1.0,
            false,
            x,
        ));
    }
    t.extend(unpinned(r));
    t.extend(server(r));
    t
}

/// pingpong_cross at the builder's defaults (threads not pinned): the idle governor where the
/// kernel may put both cores on one CPU.
fn unpinned(r: &Results) -> Vec<Target> {
    let m = |rt: &str, metric: &str| {
        r.summary("pingpong_cross", rt, "", metric)
            .map(|(median, lo, hi)| Figure { median, lo, hi })
    };
    vec![
        at_least(
            "pingpong_cross: tickless_unpinned (defaults) / threads >= 10".into(),
            ratio(
                m("tickless_unpinned", "rtt_per_s"),
                m("threads", "rtt_per_s"),
            ),
            10.0,
            x,
        ),
        at_most(
            "pingpong_cross: tickless_unpinned CPU per round trip / nogov <= 1".into(),
            ratio(
                m("tickless_unpinned", "cpu_us_per_rtt"),
                m("tickless_unpinned_nogov", "cpu_us_per_rtt"),
            ),
            1.0,
            false,
            x,
        ),
    ]
}

/// `server_tokio_shape`'s targets at each core count measured (at the default's if none was):
/// the tokio shape on tickless against tokio's multi-thread runtime, and against tickless's own
/// shape (`serve_per_core`).
fn server(r: &Results) -> Vec<Target> {
    let w = "server_tokio_shape";
    let mut labels: Vec<String> = r.labels_of(w).into_iter().map(String::from).collect();
    if labels.is_empty() {
        labels.push(format!("cores={}", super::plan::DEFAULT_CORES));
    }
    let mut t = Vec::new();
    for labels in &labels {
        let m = |rt: &str, metric: &str| {
            r.summary(w, rt, labels, metric)
                .map(|(median, lo, hi)| Figure { median, lo, hi })
        };
        let cores = labels.strip_prefix("cores=").unwrap_or(labels);
        let name = format!(
            "{w}, {}: tokio shape on tickless",
            super::report::cores_text(cores)
        );
        t.push(at_least(
            format!("{name} / tokio, requests/s >= 1"),
            ratio(m("tickless", "rps"), m("tokio", "rps")),
            1.0,
            x,
        ));
        t.push(at_most(
            format!("{name} / tokio, CPU per request <= 0.9"),
            ratio(
                m("tickless", "cpu_us_per_req"),
                m("tokio", "cpu_us_per_req"),
            ),
            0.9,
            false,
            x,
        ));
        t.push(at_least(
            format!("{name} / serve_per_core, requests/s >= 0.9"),
            ratio(m("tickless", "rps"), m("tickless_per_core", "rps")),
            0.9,
            x,
        ));
        t.push(at_most(
            format!("{name} / serve_per_core, CPU per request <= 1.1"),
            ratio(
                m("tickless", "cpu_us_per_req"),
                m("tickless_per_core", "cpu_us_per_req"),
            ),
            1.1,
            false,
            x,
        ));
    }
    t
}

/// The targets as a markdown table.
pub fn table(targets: &[Target]) -> String {
    let mut t = String::from(
        "| target | measured (medians) | worst to best run | verdict |\n|---|---:|---:|---|\n",
    );
    for x in targets {
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} |",
            x.goal, x.measured, x.range, x.verdict
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::runner::Measurement;

    #[test]
    fn server_targets_at_each_core_count() {
        let mut r = Results::default();
        // Not measured: the default core count's rows, each saying so.
        let none = server(&r);
        assert_eq!(none.len(), 4);
        assert!(none.iter().all(|t| t.verdict == "not measured"), "{none:?}");
        assert!(none[0].goal.contains("2 cores"), "{}", none[0].goal);
        for (rt, rps, cpu) in [
            ("tickless", 100.0, 9.0),
            ("tokio", 100.0, 10.0),
            ("tickless_per_core", 120.0, 8.0),
        ] {
            let mut m = Measurement::parse(&format!("rps={rps} cpu_us_per_req={cpu}"));
            m.labels.push(("cores".into(), "1".into()));
            r.add("server_tokio_shape", rt, m);
        }
        let t = server(&r);
        let verdicts: Vec<(&str, &str)> = t
            .iter()
            .map(|t| (t.measured.as_str(), t.verdict.as_str()))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("1.00x", "met (0% margin)"),
                ("0.90x", "met (0% margin)"),
                ("0.83x", "missed by 7%"),
                ("1.12x", "missed by 2%"),
            ]
        );
        assert!(
            t[0].goal.starts_with("server_tokio_shape, 1 core: "),
            "{}",
            t[0].goal
        );
    }
}
