//! The end of the report, for a reader new to it: what the tables' terms mean, then the
//! headline figures in plain words (tickless against tokio), all from this run's results.
//!
//! Both are `# ` comment lines of at most [`WIDTH`] characters, after the tables; the first
//! is [`TERMS_HEADING`] (`benches/scripts/compare_readme.py` leaves them out of the README).

use super::plan::Size;
use super::report::{human, Results};
use super::targets::Target;

/// The longest line.
pub const WIDTH: usize = 100;

/// The first line of the glossary, which starts the end of the report.
pub const TERMS_HEADING: &str = "# Terms in the tables";

/// One line per term the tables use.
const TERMS: [(&str, &str); 23] = [
    (
        "rtt_per_s",
        "round trips per second: a 4-byte message each way over two pipes",
    ),
    (
        "keep_paired",
        "share of its rate a runtime keeps with a 1 s timeout on every read (1 = free)",
    ),
    (
        "keep",
        "the same, from two separate runs (pingpong_timeout / pingpong_same): noisier",
    ),
    (
        "floor",
        "no runtime: one thread making a round trip's 4 system calls back to back",
    ),
    (
        "threads",
        "two blocking threads (pipe-test); in idle's lines, the runtime's thread count",
    ),
    (
        "rearms_per_msg",
        "timerfd_settime calls (re-programming a core's timer) per message; tickless",
    ),
    (
        "wakeups_per_msg",
        "times a tickless core blocked in epoll with nothing to run, per message",
    ),
    (
        "spurious_per_msg",
        "timer expirations that found nothing due, per message (Lazy's cost)",
    ),
    (
        "spins_per_msg",
        "idle moments a tickless core spent polling instead of blocking, per message",
    ),
    (
        "late_p50/p99_us",
        "how late a sleep ended, in µs: median and 99th percentile",
    ),
    (
        "cpu_us_per_fire",
        "CPU time (user + system) of the runtime's threads per timer fired, in µs",
    ),
    (
        "wakeups_per_s",
        "the runtime threads' voluntary context switches (wakeups) per second",
    ),
    (
        "rps",
        "server_tokio_shape: requests answered per second, as the client counted them",
    ),
    (
        "p50/p99_us",
        "a request's round trip as the client saw it, in µs: median and 99th percentile",
    ),
    (
        "cpu_us_per_req",
        "the server process's CPU time (user + system) per request it answered, in µs",
    ),
    (
        "busiest_*_share",
        "the busiest core's (worker's) share of requests, connections; 1/cores: even",
    ),
    (
        "tickless_per_core",
        "the same server's handler under serve_per_core: a listener per core",
    ),
    (
        "server_*_skew",
        "server_tokio_shape with 2 of the connections pipelining half the requests",
    ),
    (
        "steals/rebinds",
        "_per_req: tasks stolen by an idle core, streams moved to another core",
    ),
    (
        "placed_per_req",
        "tasks spawned onto another core than the spawner's, per request; tickless",
    ),
    (
        "tickless_nosteal",
        "tickless without work stealing (Builder::steal_after(None))",
    ),
    (
        "(0.85x)",
        "in the Summary table: that runtime's value over tickless's",
    ),
    (
        "eager/onidle/lazy",
        "when tickless re-arms its timer after a cancel (Policy table)",
    ),
];

/// What the plain-words summary needs besides the results.
#[derive(Debug, Clone, Copy)]
pub struct RunFacts {
    /// Run length.
    pub size: Size,
    /// Measurements made (kept), and how many of them others disturbed.
    pub measured: usize,
    /// Of `measured`, those kept although other processes used the CPUs meanwhile.
    pub disturbed: usize,
}

/// The glossary, one line per term.
pub fn glossary() -> Vec<String> {
    let mut lines = vec![format!("{TERMS_HEADING}:")];
    for (term, meaning) in TERMS {
        lines.push(format!("#   {term:<18}{meaning}"));
    }
    lines
}

/// Which way a figure is better.
#[derive(Debug, Clone, Copy)]
enum Better {
    Higher,
    Lower,
}

/// `tickless / tokio` in words: `pingpong_same: 1.17x tokio's round trips/s on one core
/// (higher is better): ahead`; both values instead when tokio's is zero.
fn ratio_line(name: &str, what: &str, better: Better, tickless: f64, tokio: f64) -> String {
    let (better_word, ahead) = match better {
        Better::Higher => ("higher", tickless > tokio),
        Better::Lower => ("lower", tickless < tokio),
    };
    let even = if tokio == 0.0 {
        tickless == 0.0
    } else {
        (tickless / tokio - 1.0).abs() < 0.05
    };
    let verdict = if even {
        "about even"
    } else if ahead {
        "ahead"
    } else {
        "behind"
    };
    let ratio = tickless / tokio;
    let figure = if tokio == 0.0 {
        format!("tickless {}, tokio 0", human(tickless))
    } else if ratio > 0.0 && ratio < 0.2 {
        format!("1/{:.0} of tokio's", 1.0 / ratio)
    } else {
        format!("{ratio:.2}x tokio's")
    };
    format!("#   {name}: {figure} {what} ({better_word} is better): {verdict}")
}

/// The headline figures in plain words: tickless's ratio to tokio on each workload, what the
/// targets came to, and how far to trust the run. A dozen lines at most.
pub fn plain_words(results: &Results, targets: &[Target], facts: RunFacts) -> Vec<String> {
    let mut lines =
        vec!["# In plain words: tickless against tokio, from this run's medians:".to_string()];
    let pair = |w: &str, labels: &str, metric: &str| {
        Some((
            results.median(w, "tickless", labels, metric)?,
            results.median(w, "tokio", labels, metric)?,
        ))
    };
    let rows: [(&str, &str, &str, &str, Better); 8] = [
        (
            "pingpong_same",
            "",
            "rtt_per_s",
            "round trips/s on one core",
            Better::Higher,
        ),
        (
            "pingpong_cross",
            "",
            "rtt_per_s",
            "round trips/s across cores",
            Better::Higher,
        ),
        (
            "pingpong_timeout",
            "",
            "rtt_per_s",
            "round trips/s with timeouts",
            Better::Higher,
        ),
        (
            "pingpong_timeout",
            "",
            "keep_paired",
            "rate kept under timeouts",
            Better::Higher,
        ),
        (
            "sleep_precision",
            "sleep=100us",
            "late_p50_us",
            "lateness, 100 µs sleeps",
            Better::Lower,
        ),
        (
            "idle",
            "",
            "wakeups_per_s",
            "wakeups/s, 10,000 idle tasks",
            Better::Lower,
        ),
        (
            "timer_churn",
            "",
            "cpu_us_per_fire",
            "CPU per timer fired",
            Better::Lower,
        ),
        (
            "timer_churn",
            "",
            "late_p50_us",
            "median timer lateness",
            Better::Lower,
        ),
    ];
    for (w, labels, metric, what, better) in rows {
        if let Some((t, k)) = pair(w, labels, metric) {
            lines.push(ratio_line(w, what, better, t, k));
        }
    }
    if lines.len() == 1 {
        lines.push("#   (no workload ran on both tickless and tokio)".into());
    }
    let measured = targets
        .iter()
        .filter(|t| t.verdict != "not measured")
        .count();
    if measured > 0 {
        let met = targets
            .iter()
            .filter(|t| t.verdict.starts_with("met"))
            .count();
        lines.push(format!(
            "#   targets of the benchmarks issue: {met} of {measured} met (the Targets table says \
             by how much)"
        ));
    }
    let runs = facts.size.sizes().reps_text();
    lines.push(match facts.size {
        Size::Smoke => {
            "#   --smoke: tiny runs that check every path runs; the figures mean nothing".into()
        }
        Size::Quick => format!("#   --quick: {runs}: noisy; the README's tables are a full run's"),
        Size::Full => format!("#   {runs}; the README's tables come from a run like this"),
    });
    if facts.disturbed > 0 {
        lines.push(format!(
            "#   {} of {} measurements ran while other processes were busy: take those as rough",
            facts.disturbed, facts.measured
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glossary_lines_fit() {
        for l in glossary() {
            assert!(
                l.chars().count() <= WIDTH,
                "{} chars: {l}",
                l.chars().count()
            );
        }
    }

    #[test]
    fn ratios_in_words() {
        let l = ratio_line("pingpong_same", "round trips", Better::Higher, 117.0, 100.0);
        assert_eq!(
            l,
            "#   pingpong_same: 1.17x tokio's round trips (higher is better): ahead"
        );
        let l = ratio_line("idle", "wakeups", Better::Lower, 0.0, 0.0);
        assert!(
            l.contains("tickless 0, tokio 0 wakeups") && l.ends_with("about even"),
            "{l}"
        );
        let l = ratio_line("s", "lateness", Better::Lower, 10.0, 910.0);
        assert!(
            l.contains("1/91 of tokio's lateness") && l.ends_with("ahead"),
            "{l}"
        );
        let l = ratio_line("t", "CPU", Better::Lower, 2.0, 1.0);
        assert!(
            l.contains("2.00x tokio's CPU") && l.ends_with("behind"),
            "{l}"
        );
    }

    #[test]
    fn plain_words_fit_in_a_dozen_lines() {
        let mut r = Results::default();
        for (w, labels, metric) in [
            ("pingpong_same", "", "rtt_per_s"),
            ("pingpong_cross", "", "rtt_per_s"),
            ("pingpong_timeout", "", "rtt_per_s"),
            ("pingpong_timeout", "", "keep_paired"),
            ("sleep_precision", "sleep=100us", "late_p50_us"),
            ("idle", "", "wakeups_per_s"),
            ("timer_churn", "", "cpu_us_per_fire"),
            ("timer_churn", "", "late_p50_us"),
        ] {
            for (rt, v) in [("tickless", 1234.5), ("tokio", 0.001)] {
                let line = format!("{labels} {metric}={v}");
                r.add(w, rt, super::super::runner::Measurement::parse(&line));
            }
        }
        let facts = RunFacts {
            size: Size::Quick,
            measured: 113,
            disturbed: 113,
        };
        let lines = plain_words(&r, &super::super::targets::evaluate(&r), facts);
        assert!(lines.len() <= 12, "{lines:#?}");
        assert_eq!(lines.len(), 12, "{lines:#?}");
        for l in lines {
            assert!(
                l.chars().count() <= WIDTH,
                "{} chars: {l}",
                l.chars().count()
            );
        }
    }
}
