//! Gathering the children's results, and printing them: one line per result, then the summary
//! table of ratios to tickless and the policy table (markdown, so the README takes them as
//! they are).

use std::fmt::Write as _;

use super::child::fmt_num;
use super::runner::Measurement;

/// Every run of one (workload, runtime, labels).
#[derive(Debug, Clone)]
pub struct Entry {
    /// Workload name.
    pub workload: String,
    /// Contender name.
    pub runtime: String,
    /// Labels, as printed (`sleep=100us`), or empty.
    pub labels: String,
    /// Each run's metrics.
    pub runs: Vec<Vec<(String, f64)>>,
}

impl Entry {
    /// The metric names, in first-seen order.
    fn metric_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for run in &self.runs {
            for (k, _) in run {
                if !names.contains(&k.as_str()) {
                    names.push(k);
                }
            }
        }
        names
    }

    /// Median, min and max of `metric` over the runs.
    pub fn summary(&self, metric: &str) -> Option<(f64, f64, f64)> {
        let values: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|r| r.iter().find(|(k, _)| k == metric).map(|&(_, v)| v))
            .collect();
        crate::stats::summary(&values)
    }
}

/// All results, in the order they first came.
#[derive(Debug, Clone, Default)]
pub struct Results {
    /// One entry per (workload, runtime, labels).
    pub entries: Vec<Entry>,
}

impl Results {
    /// Adds one run's result line.
    pub fn add(&mut self, workload: &str, runtime: &str, m: Measurement) {
        let labels = m.label_text();
        let i = match self
            .entries
            .iter()
            .position(|e| e.workload == workload && e.runtime == runtime && e.labels == labels)
        {
            Some(i) => i,
            None => {
                self.entries.push(Entry {
                    workload: workload.into(),
                    runtime: runtime.into(),
                    labels,
                    runs: Vec::new(),
                });
                self.entries.len() - 1
            }
        };
        self.entries[i].runs.push(m.metrics);
    }

    fn entry(&self, workload: &str, runtime: &str, labels: &str) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.workload == workload && e.runtime == runtime && e.labels == labels)
    }

    /// Median, min and max of a metric over the runs.
    pub fn summary(
        &self,
        workload: &str,
        runtime: &str,
        labels: &str,
        metric: &str,
    ) -> Option<(f64, f64, f64)> {
        self.entry(workload, runtime, labels)?.summary(metric)
    }

    /// The median of a metric.
    pub fn median(&self, workload: &str, runtime: &str, labels: &str, metric: &str) -> Option<f64> {
        self.entry(workload, runtime, labels)?
            .summary(metric)
            .map(|s| s.0)
    }

    /// One line per result: medians, then `_min` and `_max` when there were several runs.
    pub fn lines(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| {
                let mut line = format!("workload={} runtime={}", e.workload, e.runtime);
                if !e.labels.is_empty() {
                    line += " ";
                    line += &e.labels;
                }
                let names = e.metric_names();
                for name in &names {
                    if let Some((med, _, _)) = e.summary(name) {
                        let _ = write!(line, " {name}={}", fmt_num(med));
                    }
                }
                if e.runs.len() > 1 {
                    for name in &names {
                        if let Some((_, min, max)) = e.summary(name) {
                            let _ = write!(
                                line,
                                " {name}_min={} {name}_max={}",
                                fmt_num(min),
                                fmt_num(max)
                            );
                        }
                    }
                }
                let _ = write!(line, " runs={}", e.runs.len());
                line
            })
            .collect()
    }
}

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Better {
    Higher,
    Lower,
}

/// The columns of the summary, in order.
const COLUMNS: [&str; 10] = [
    "tickless",
    "tickless_spin50us",
    "tickless_slack1ms",
    "tickless_per_core",
    "tokio",
    "smol",
    "monoio_legacy",
    "monoio_uring",
    "threads",
    "floor",
];

/// A row of the summary: (workload, labels, metric, better, unit).
const ROWS: [(&str, &str, &str, Better, &str); 14] = [
    ("pingpong_same", "", "rtt_per_s", Better::Higher, ""),
    ("pingpong_cross", "", "rtt_per_s", Better::Higher, ""),
    ("pingpong_timeout", "", "rtt_per_s", Better::Higher, ""),
    ("pingpong_timeout", "", "keep_paired", Better::Higher, ""),
    ("pingpong_timeout", "", "keep", Better::Higher, ""),
    (
        "sleep_precision",
        "sleep=100us",
        "late_p50_us",
        Better::Lower,
        " µs",
    ),
    (
        "sleep_precision",
        "sleep=100us",
        "late_p99_us",
        Better::Lower,
        " µs",
    ),
    (
        "sleep_precision",
        "sleep=1ms",
        "late_p50_us",
        Better::Lower,
        " µs",
    ),
    (
        "sleep_precision",
        "sleep=1ms",
        "late_p99_us",
        Better::Lower,
        " µs",
    ),
    ("idle", "", "wakeups_per_s", Better::Lower, ""),
    ("timer_churn", "", "wakeups_per_s", Better::Lower, ""),
    ("timer_churn", "", "cpu_us_per_fire", Better::Lower, " µs"),
    ("timer_churn", "", "late_p50_us", Better::Lower, " µs"),
    ("timer_churn", "", "late_p99_us", Better::Lower, " µs"),
];

/// `server_tokio_shape`'s rows, at each core count measured: (metric, better, unit).
const SERVER_ROWS: [(&str, Better, &str); 5] = [
    ("rps", Better::Higher, ""),
    ("p99_us", Better::Lower, " µs"),
    ("cpu_us_per_req", Better::Lower, " µs"),
    ("busiest_req_share", Better::Lower, ""),
    ("busiest_conn_share", Better::Lower, ""),
];

/// `1 core`, `2 cores`: a core count as it is written in the tables.
pub fn cores_text(n: impl std::fmt::Display) -> String {
    let n = n.to_string();
    if n == "1" {
        "1 core".into()
    } else {
        format!("{n} cores")
    }
}

/// A value for a table: thousands as `k`, small numbers with a few digits.
pub fn human(v: f64) -> String {
    let a = v.abs();
    if a >= 10_000.0 {
        format!("{:.0}k", v / 1_000.0)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if v == 0.0 {
        "0".into()
    } else if a >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.1e}")
    }
}

/// `text` as lines of at most `width` characters (a word longer than that is cut): the
/// first line starts with `first`, the others with `rest`.
pub fn wrap(text: &str, first: &str, rest: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true; // whether `line` holds only its prefix
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let used = line.chars().count() + usize::from(!empty);
            if used + word.len() <= width {
                if !empty {
                    line.push(' ');
                }
                line.extend(word.iter());
                empty = false;
                break;
            }
            if empty {
                // Longer than a whole line: cut it.
                let room = width.saturating_sub(line.chars().count()).max(1);
                line.extend(word.drain(..room.min(word.len())));
                if word.is_empty() {
                    empty = false;
                    break;
                }
            }
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
        }
    }
    if !empty || lines.is_empty() {
        lines.push(line);
    }
    lines
}

impl Results {
    /// A metric, or `keep` (timeout rate over same-core rate), by runtime.
    fn value(&self, workload: &str, labels: &str, metric: &str, runtime: &str) -> Option<f64> {
        if metric == "keep" {
            let t = self.median("pingpong_timeout", runtime, "", "rtt_per_s")?;
            let s = self.median("pingpong_same", runtime, "", "rtt_per_s")?;
            return Some(t / s);
        }
        self.median(workload, runtime, labels, metric)
    }

    /// The summary table: each value, and its ratio to tickless's. Two rows are ratios already:
    /// `keep_paired`, what a runtime keeps of its rate with a timeout on every read, measured in
    /// one process (blocks with and without timeouts alternating), and `keep`, the same from the
    /// medians of the separate `pingpong_timeout` and `pingpong_same` runs (noisier: on a virtual
    /// machine two processes differ by more than the timeouts cost).
    pub fn summary_table(&self) -> String {
        let cols: Vec<&str> = COLUMNS
            .iter()
            .copied()
            .filter(|c| self.entries.iter().any(|e| e.runtime == *c))
            .collect();
        let mut t = String::new();
        let _ = writeln!(t, "| workload | metric | better | {} |", cols.join(" | "));
        let _ = writeln!(t, "|---|---|---|{}", "---:|".repeat(cols.len()));
        let mut rows: Vec<(&str, &str, &str, Better, &str)> = ROWS.to_vec();
        for w in ["server_tokio_shape", "server_tokio_shape_skew"] {
            for labels in self.labels_of(w) {
                for (metric, better, unit) in SERVER_ROWS {
                    rows.push((w, labels, metric, better, unit));
                }
            }
        }
        for (w, labels, metric, better, unit) in rows {
            let base = self.value(w, labels, metric, "tickless");
            let cells: Vec<String> = cols
                .iter()
                .map(|c| match self.value(w, labels, metric, c) {
                    None => String::new(),
                    Some(v) if *c == "tickless" => format!("**{}{unit}**", human(v)),
                    Some(v) => match base {
                        Some(b) if b != 0.0 && !metric.starts_with("keep") => {
                            format!("{}{unit} ({:.2}x)", human(v), v / b)
                        }
                        _ => format!("{}{unit}", human(v)),
                    },
                })
                .collect();
            if cells.iter().all(String::is_empty) {
                continue;
            }
            let name = match labels.strip_prefix("cores=") {
                _ if labels.is_empty() => w.to_string(),
                Some(n) => format!("{w} ({})", cores_text(n)),
                None => format!("{w} ({})", labels.split('=').nth(1).unwrap_or(labels)),
            };
            let better = match better {
                Better::Higher => "higher",
                Better::Lower => "lower",
            };
            let _ = writeln!(
                t,
                "| {name} | {metric} | {better} | {} |",
                cells.join(" | ")
            );
        }
        t
    }

    /// The labels of `workload`'s results, each once, in the order they first came.
    pub fn labels_of(&self, workload: &str) -> Vec<&str> {
        let mut labels: Vec<&str> = Vec::new();
        for e in self.entries.iter().filter(|e| e.workload == workload) {
            if !labels.contains(&e.labels.as_str()) {
                labels.push(&e.labels);
            }
        }
        labels
    }

    /// The policy table: the ping-pong workloads and timer churn on tickless with each
    /// re-arm policy.
    pub fn policy_table(&self) -> String {
        let cols: [(&str, &str, &str); 9] = [
            ("same rtt/s", "pingpong_same", "rtt_per_s"),
            ("cross rtt/s", "pingpong_cross", "rtt_per_s"),
            ("timeout rtt/s", "pingpong_timeout", "rtt_per_s"),
            ("timeout keep (paired)", "pingpong_timeout", "keep_paired"),
            ("timeout re-arms/msg", "pingpong_timeout", "rearms_per_msg"),
            ("timeout wakeups/msg", "pingpong_timeout", "wakeups_per_msg"),
            ("churn wakeups/s", "timer_churn", "wakeups_per_s"),
            ("churn CPU µs/fire", "timer_churn", "cpu_us_per_fire"),
            ("churn late p50 µs", "timer_churn", "late_p50_us"),
        ];
        let mut t = String::new();
        let names: Vec<&str> = cols.iter().map(|c| c.0).collect();
        let _ = writeln!(t, "| policy | {} |", names.join(" | "));
        let _ = writeln!(t, "|---|{}", "---:|".repeat(cols.len()));
        let default = format!("{:?}", tickless::RearmPolicy::default()).to_lowercase();
        // The policies on the timerfd device, then the epoll device's rows (its re-arms are
        // free, the policy only decides how often the deadline is recomputed).
        for (p, label) in [
            ("eager", "eager"),
            ("onidle", "onidle"),
            ("lazy", "lazy"),
            ("epoll", "lazy, epoll device"),
            ("epoll_onidle", "onidle, epoll device"),
            ("nogov", "lazy, idle governor off"),
            ("spin50us", "lazy, fixed 50 µs spin"),
        ] {
            let rt = format!("tickless_{p}");
            if !self.entries.iter().any(|e| e.runtime == rt) {
                continue;
            }
            let cells: Vec<String> = cols
                .iter()
                .map(|&(_, w, m)| self.value(w, "", m, &rt).map_or(String::new(), human))
                .collect();
            let mark = if p == default { " (default)" } else { "" };
            let _ = writeln!(t, "| {label}{mark} | {} |", cells.join(" | "));
        }
        t
    }
}

/// The timer_churn frontier's rows: tickless at each default slack, then every peer.
pub const FRONTIER: [(&str, &str); 16] = [
    ("tickless_slack0", "tickless, no slack"),
    ("tickless_slack10us", "tickless, 10 µs slack"),
    ("tickless_slack100us", "tickless, 100 µs slack"),
    ("tickless_slack1ms", "tickless, 1 ms slack"),
    (
        "tickless_prop64",
        "tickless, 1/64 of the length up to 1,024 µs",
    ),
    (
        "tickless_prop16",
        "tickless, 1/16 of the length up to 1,024 µs",
    ),
    (
        "tickless_prop4",
        "tickless, 1/4 of the length up to 1,024 µs",
    ),
    ("tickless_knee8ms", "tickless, length²/8 ms up to 1,024 µs"),
    (
        "tickless",
        "tickless, default (length²/2 ms up to 1,024 µs)",
    ),
    ("tickless_nolead", "tickless, default slack, no wakeup lead"),
    (
        "tickless_nogov",
        "tickless, default slack, idle governor off",
    ),
    (
        "tickless_spin50us",
        "tickless, default slack, fixed 50 µs spin",
    ),
    ("tokio", "tokio"),
    ("smol", "smol"),
    ("monoio_legacy", "monoio_legacy"),
    ("monoio_uring", "monoio_uring"),
];

impl Results {
    /// The frontier of timer_churn: CPU per fire against lateness, for tickless at each default
    /// slack and every peer, with the ratios to tokio's.
    pub fn frontier_table(&self) -> String {
        let cols = [
            "wakeups_per_s",
            "cpu_us_per_fire",
            "late_p50_us",
            "late_p99_us",
        ];
        let mut t = String::from(
            "| contender | wakeups/s | CPU µs per fire | late p50 µs | late p99 µs |\n\
             |---|---:|---:|---:|---:|\n",
        );
        for (rt, name) in FRONTIER {
            if !self
                .entries
                .iter()
                .any(|e| e.runtime == rt && e.workload == "timer_churn")
            {
                continue;
            }
            let cells: Vec<String> = cols
                .iter()
                .map(|m| {
                    let v = self.median("timer_churn", rt, "", m);
                    let tokio = self.median("timer_churn", "tokio", "", m);
                    match (v, tokio) {
                        (Some(v), Some(b)) if rt != "tokio" && b != 0.0 => {
                            format!("{} ({:.2}x)", human(v), v / b)
                        }
                        (Some(v), _) => human(v),
                        (None, _) => String::new(),
                    }
                })
                .collect();
            let _ = writeln!(t, "| {name} | {} |", cells.join(" | "));
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wraps_at_the_width_with_prefixes() {
        let text = "one two three four five six seven eight nine ten eleven twelve";
        let lines = wrap(text, "# note: ", "#   ", 24);
        assert!(lines.iter().all(|l| l.chars().count() <= 24), "{lines:?}");
        assert!(lines[0].starts_with("# note: one"));
        assert!(lines[1..].iter().all(|l| l.starts_with("#   ")));
        let words: Vec<&str> = lines
            .iter()
            .enumerate()
            .flat_map(|(i, l)| l[if i == 0 { 8 } else { 4 }..].split(' '))
            .collect();
        assert_eq!(words.join(" "), text);
    }

    #[test]
    fn short_text_is_one_line_and_long_words_are_cut() {
        assert_eq!(wrap("short", "# ", "#   ", 100), ["# short"]);
        assert_eq!(wrap("", "# note: ", "#   ", 100), ["# note: "]);
        let long = "x".repeat(30);
        let lines = wrap(&long, "# ", "# ", 12);
        assert!(lines.iter().all(|l| l.chars().count() <= 12), "{lines:?}");
        assert_eq!(lines.concat().replace("# ", ""), long);
    }
}
