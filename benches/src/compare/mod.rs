//! `compare`: every workload on every contender, each measurement in a fresh child process,
//! round-robin over the repetitions (so that a slow minute of the machine hurts every
//! contender alike), then one line per result and the tables.
//!
//! ```text
//! cargo run --release -p tickless-benches --bin compare [-- --quick | --smoke]
//!     [--only WORKLOAD,...] [--runtimes NAME,...] [--no-syscalls] [--http]
//! ```
//!
//! Output (stdout): `# ...` notes, one `workload=<w> runtime=<r> [labels] <metric>=<median>
//! ... <metric>_min=... <metric>_max=... runs=<n>` line per result, then markdown sections:
//! the summary (ratios to tickless), the policy table, the targets, the system calls; at the
//! end, `# ` lines again: what the tables' terms mean, and the headline figures in plain words
//! (tickless against tokio). Notes are wrapped at 100 characters, continued on `#   ` lines.
//! Progress goes to stderr, the waits for a quiet machine included.

mod child;
mod plan;
mod quiet;
mod report;
mod runner;
mod summary;
mod syscalls;
mod targets;

use std::process::ExitCode;
use std::time::{Duration, Instant};

pub use plan::{Size, Workload};
pub use report::Results;

use runner::{child_command, run_child, Outcome};

/// The command line of the parent.
#[derive(Debug, Clone)]
struct Options {
    /// Run length.
    size: Size,
    /// Workloads to run (all if empty).
    only: Vec<Workload>,
    /// Contenders to run (all if empty).
    runtimes: Vec<String>,
    /// Count system calls.
    syscalls: bool,
    /// Also run the `http_hello` workload (hyper under wrk, through `scripts/http_load.sh`).
    http: bool,
}

const USAGE: &str = "usage: compare [--quick | --smoke] [--only WORKLOAD,...] \
[--runtimes NAME,...] [--no-syscalls] [--http]
  --quick      about 1.5 minutes (up to 2 more waiting on a busy machine): smaller counts,
               fewer repetitions
  --smoke      a few seconds, tiny counts: checks every path runs, measures nothing
  --only       workloads: pingpong_same,pingpong_cross,pingpong_timeout,sleep_precision,idle,timer_churn
  --runtimes   contenders: tickless,tickless_spin50us,tickless_slack1ms,tickless_slack0,
               tickless_slack10us,tickless_slack100us,tickless_prop4,tickless_prop16,
               tickless_prop64,tickless_knee8ms,
               tickless_eager,tickless_onidle,tickless_lazy,tickless_epoll,
               tickless_epoll_onidle,tickless_nolead,tokio,smol,monoio_legacy,
               monoio_uring,threads,floor
  --no-syscalls  skip the strace count
  --http       also run http_hello: tickless's and tokio's hyper servers under wrk
               (benches/scripts/http_load.sh; builds the examples, installs wrk if missing)";

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        size: Size::Full,
        only: Vec::new(),
        runtimes: Vec::new(),
        syscalls: true,
        http: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => o.size = Size::Quick,
            "--smoke" => o.size = Size::Smoke,
            "--no-syscalls" => o.syscalls = false,
            "--http" => o.http = true,
            "--only" => {
                let v = it.next().ok_or("--only needs a list")?;
                for name in v.split(',') {
                    o.only
                        .push(Workload::named(name).ok_or(format!("no workload {name:?}"))?);
                }
            }
            "--runtimes" => {
                let v = it.next().ok_or("--runtimes needs a list")?;
                for name in v.split(',') {
                    crate::rt::Contender::named(name).ok_or(format!("no contender {name:?}"))?;
                    o.runtimes.push(name.to_string());
                }
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(o)
}

/// The `compare` binary's main.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("__child") {
        return child::main(&args[1..]);
    }
    let opts = match parse_options(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let failed = run(&opts);
    if failed > 0 {
        eprintln!("compare: {failed} measurement(s) failed (see the notes)");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// How long one child may take before it is killed.
fn child_limit(size: Size) -> Duration {
    match size {
        Size::Full => Duration::from_secs(180),
        Size::Quick => Duration::from_secs(90),
        Size::Smoke => Duration::from_secs(30),
    }
}

/// How long, in all, `compare` may spend on account of other processes: waiting for them to
/// leave the machine alone, and re-running the measurements they disturbed.
fn quiet_budget(size: Size) -> Duration {
    match size {
        Size::Full => Duration::from_secs(300),
        Size::Quick => Duration::from_secs(120),
        Size::Smoke => Duration::ZERO,
    }
}

/// A measurement kept although other processes used the CPUs meanwhile.
#[derive(Debug, Clone)]
struct Disturbed {
    workload: String,
    runtime: String,
    /// CPUs the others used, on average.
    others: f64,
}

/// Runs one measurement on a quiet machine: waits for the machine to be idle, runs the child,
/// and runs it again (twice at most) if other processes used the CPUs meanwhile, the discarded
/// run's time charged to `patience`. A measurement kept although disturbed goes in `disturbed`,
/// and what others used during it is returned with it.
fn measure_quietly(
    size: Size,
    args: &[String],
    patience: &mut quiet::Patience,
    disturbed: &mut Vec<Disturbed>,
) -> (Outcome, Option<f64>) {
    let run = || match child_command(&[], args) {
        Ok(cmd) => run_child(cmd, child_limit(size)),
        Err(e) => Outcome::Failed(e.to_string()),
    };
    if size == Size::Smoke {
        return (run(), None); // measures nothing: no need to wait
    }
    let attempts = 3;
    let mut last = None;
    for attempt in 1..=attempts {
        patience.wait_quiet();
        let window = quiet::Window::start();
        let began = Instant::now();
        let outcome = run();
        let others = window.and_then(|w| w.others()).unwrap_or(0.0);
        if others <= quiet::MAX_OTHERS || !matches!(outcome, Outcome::Done(_)) {
            return (outcome, None);
        }
        last = Some((outcome, others));
        if attempt == attempts || patience.is_spent() {
            break;
        }
        patience.charge(began.elapsed());
        eprintln!(
            "  ({} {}: other processes used {others:.2} CPUs meanwhile: measuring again; {})",
            args[1],
            args[2],
            patience.left_text()
        );
    }
    let (outcome, others) = last.expect("at least one attempt");
    disturbed.push(Disturbed {
        workload: args[1].clone(),
        runtime: args[2].clone(),
        others,
    });
    (outcome, Some(others))
}

/// Runs the comparison; returns how many measurements failed.
fn run(opts: &Options) -> usize {
    let started = Instant::now();
    let sizes = opts.size.sizes();
    let size_arg = child::size_name(opts.size).to_string();
    let mut notes: Vec<String> = Vec::new();
    let mut failed = 0;

    // The jobs, in report order.
    let mut jobs: Vec<(Workload, &'static str)> = Vec::new();
    for w in Workload::ALL {
        if !opts.only.is_empty() && !opts.only.contains(&w) {
            continue;
        }
        for &c in w.contenders() {
            if opts.runtimes.is_empty() || opts.runtimes.iter().any(|r| r == c) {
                jobs.push((w, c));
            }
        }
    }

    // Contenders that may not run here (io_uring disabled, say) are probed once.
    let mut unavailable: Vec<&str> = Vec::new();
    for c in ["monoio_legacy", "monoio_uring"] {
        if !jobs.iter().any(|j| j.1 == c) {
            continue;
        }
        let cmd = child_command(&[], &["probe".into(), c.into()]);
        match cmd.map(|cmd| run_child(cmd, Duration::from_secs(30))) {
            Ok(Outcome::Done(_)) => {}
            Ok(Outcome::Skipped(why)) | Ok(Outcome::Failed(why)) => {
                notes.push(format!("{c} skipped: not available here: {why}"));
                unavailable.push(c);
            }
            Err(e) => {
                notes.push(format!("{c} skipped: {e}"));
                unavailable.push(c);
            }
        }
    }
    jobs.retain(|j| !unavailable.contains(&j.1));

    // Round-robin: every job once per repetition.
    let total: usize = jobs.iter().map(|j| sizes.reps(j.0)).sum();
    eprintln!(
        "compare: {total} measurements ({}), each in a fresh process{}; progress here, the \
         report on stdout at the end",
        sizes.reps_text(),
        if opts.size == Size::Smoke {
            String::new()
        } else {
            format!(
                " once the machine is quiet ({} s of waiting at most in all)",
                quiet_budget(opts.size).as_secs()
            )
        }
    );
    let mut started_jobs = 0;
    let mut results = Results::default();
    let mut patience = quiet::Patience::new(quiet_budget(opts.size));
    let mut disturbed: Vec<Disturbed> = Vec::new();
    let mut measured = 0;
    let reps = jobs.iter().map(|j| sizes.reps(j.0)).max().unwrap_or(0);
    for rep in 0..reps {
        for &(w, c) in &jobs {
            if rep >= sizes.reps(w) {
                continue;
            }
            let args = [size_arg.clone(), w.name().into(), c.into()];
            started_jobs += 1;
            let (outcome, others) =
                measure_quietly(opts.size, &args, &mut patience, &mut disturbed);
            let disturbed_by = others.map_or(String::new(), |o| {
                format!(", disturbed: others used {o:.2} CPUs")
            });
            match outcome {
                Outcome::Done(lines) => {
                    measured += 1;
                    for m in lines {
                        eprintln!(
                            "[{started_jobs}/{total}] {} {} (run {} of {}{disturbed_by}) {}",
                            w.name(),
                            c,
                            rep + 1,
                            sizes.reps(w),
                            m.metrics
                                .iter()
                                .map(|(k, v)| format!("{k}={}", child::fmt_num(*v)))
                                .chain(m.labels.iter().map(|(k, v)| format!("{k}={v}")))
                                .collect::<Vec<_>>()
                                .join(" ")
                        );
                        results.add(w.name(), c, m);
                    }
                }
                Outcome::Skipped(why) => {
                    let note = format!("{} {c} skipped: {why}", w.name());
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                }
                Outcome::Failed(why) => {
                    failed += 1;
                    eprintln!("[{}] {} {c} FAILED: {why}", rep + 1, w.name());
                    notes.push(format!("{} {c} run {} failed: {why}", w.name(), rep + 1));
                }
            }
        }
    }

    if !disturbed.is_empty() {
        notes.push(disturbed_note(&disturbed, measured));
    }

    // System calls per round trip, on the ping-pong workloads.
    let mut syscall_results = Results::default();
    if let (true, Some(lengths)) = (opts.syscalls, sizes.strace_rtts) {
        match syscalls::ensure_strace(opts.size != Size::Smoke) {
            Err(why) => notes.push(format!("syscalls skipped: {why}")),
            Ok(()) => {
                for &(w, c) in &jobs {
                    // The policies differ only where there are timers; `tickless_lazy` is
                    // the default's twin.
                    let policy =
                        matches!(c, "tickless_eager" | "tickless_onidle" | "tickless_epoll");
                    if w.pingpong_mode().is_none()
                        || c == "tickless_lazy"
                        || (policy && w != Workload::PingpongTimeout)
                    {
                        continue;
                    }
                    match syscalls::per_round_trip(opts.size, w, c, lengths) {
                        Ok(m) => {
                            eprintln!("[syscalls] {} {c} total={}", w.name(), m.metrics[0].1);
                            syscall_results.add("syscalls", c, m);
                        }
                        Err(why) => notes.push(format!("syscalls of {} {c}: {why}", w.name())),
                    }
                }
            }
        }
    }

    print_report(opts, &results, &syscall_results, &notes, started.elapsed());
    if opts.http && opts.size != Size::Smoke {
        failed += http_hello(opts.size) as usize;
    }
    let facts = summary::RunFacts {
        size: opts.size,
        measured,
        disturbed: disturbed.len(),
    };
    println!();
    for l in summary::glossary() {
        println!("{l}");
    }
    for l in summary::plain_words(&results, &targets::evaluate(&results), facts) {
        println!("{l}");
    }
    failed
}

/// The note on the measurements kept although disturbed: each named when they are few (the
/// repetitions of one together), counted by workload when they are many.
fn disturbed_note(disturbed: &[Disturbed], measured: usize) -> String {
    let head = format!(
        "{} of {measured} measurements kept although other processes used more than {:.2} CPUs \
         during them (after retries, or out of patience)",
        disturbed.len(),
        quiet::MAX_OTHERS,
    );
    let mut groups: Vec<(&str, &str, Vec<f64>)> = Vec::new();
    for d in disturbed {
        match groups
            .iter_mut()
            .find(|g| g.0 == d.workload && g.1 == d.runtime)
        {
            Some(g) => g.2.push(d.others),
            None => groups.push((&d.workload, &d.runtime, vec![d.others])),
        }
    }
    if disturbed.len() <= 8 {
        let each: Vec<String> = groups
            .iter()
            .map(|(w, r, o)| {
                let o: Vec<String> = o.iter().map(|x| format!("{x:.2}")).collect();
                format!("{w} {r} ({})", o.join(", "))
            })
            .collect();
        return format!("{head}: {}", each.join(", "));
    }
    let mut by_workload: Vec<(&str, usize)> = Vec::new();
    for d in disturbed {
        match by_workload.iter_mut().find(|g| g.0 == d.workload) {
            Some(g) => g.1 += 1,
            None => by_workload.push((&d.workload, 1)),
        }
    }
    let others: Vec<f64> = disturbed.iter().map(|d| d.others).collect();
    let (median, _, max) = crate::stats::summary(&others).unwrap_or_default();
    let counts: Vec<String> = by_workload
        .iter()
        .map(|(w, n)| format!("{w} {n}"))
        .collect();
    format!(
        "{head}: {}; others used {median:.2} CPUs at the median, {max:.2} at most; treat those \
         figures as rough",
        counts.join(", ")
    )
}

/// The `http_hello` workload: the load script prints its results in this binary's format
/// (`workload=http_hello runtime=... rps=... p99_us=... cpu_us_per_req=...`, then the ratios).
/// Returns whether it failed.
fn http_hello(size: Size) -> bool {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/http_load.sh");
    let rounds = if size == Size::Quick { "1" } else { "3" };
    println!("\n# http_hello: {script} --rounds {rounds}");
    match std::process::Command::new("bash")
        .args([script, "--rounds", rounds])
        .status()
    {
        Ok(s) if s.success() => false,
        Ok(s) => {
            eprintln!("compare: http_hello failed: {s}");
            true
        }
        Err(e) => {
            eprintln!("compare: http_hello could not start: {e}");
            true
        }
    }
}

fn print_report(
    opts: &Options,
    results: &Results,
    syscalls: &Results,
    notes: &[String],
    took: Duration,
) {
    let size = child::size_name(opts.size);
    println!(
        "# compare: size={size} cpus={:?} took={:.0}s",
        crate::sys::allowed_cpus().unwrap_or_default(),
        took.as_secs_f64()
    );
    for n in notes {
        for l in report::wrap(n, "# note: ", "#   ", summary::WIDTH) {
            println!("{l}");
        }
    }
    for l in results.lines() {
        println!("{l}");
    }
    for l in syscalls.lines() {
        println!("{l}");
    }
    println!();
    println!("### Summary: medians, and each one's ratio to tickless's");
    println!();
    print!("{}", results.summary_table());
    println!();
    println!(
        "### Policy table: tickless with each re-arm policy (default {:?})",
        tickless::RearmPolicy::default()
    );
    println!();
    print!("{}", results.policy_table());
    println!();
    println!("### Frontier: timer_churn, CPU per fire against lateness (ratios to tokio's)");
    println!();
    print!("{}", results.frontier_table());
    println!();
    println!("### Targets");
    println!();
    print!("{}", targets::table(&targets::evaluate(results)));
    if !syscalls.entries.is_empty() {
        println!();
        println!("### System calls per round trip (strace -f -c; two run lengths subtracted)");
        println!();
        println!("| workload | runtime | total | by name |");
        println!("|---|---|---:|---|");
        for e in &syscalls.entries {
            let run = &e.runs[0];
            let by_name: Vec<String> = run[1..]
                .iter()
                .map(|(k, v)| format!("{k} {}", report::human(*v)))
                .collect();
            println!(
                "| {} | {} | {} | {} |",
                e.labels.trim_start_matches("of="),
                e.runtime,
                report::human(run[0].1),
                by_name.join(", ")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(workload: &str, runtime: &str, others: f64) -> Disturbed {
        Disturbed {
            workload: workload.into(),
            runtime: runtime.into(),
            others,
        }
    }

    #[test]
    fn few_disturbed_are_named_many_counted() {
        let few = [
            d("pingpong_same", "tokio", 0.5),
            d("pingpong_same", "tokio", 0.25),
            d("idle", "smol", 1.0),
        ];
        let note = disturbed_note(&few, 20);
        assert!(note.starts_with("3 of 20 measurements kept"), "{note}");
        assert!(
            note.ends_with(": pingpong_same tokio (0.50, 0.25), idle smol (1.00)"),
            "{note}"
        );
        let many: Vec<Disturbed> = (0..100)
            .map(|i| d(if i < 90 { "pingpong_same" } else { "idle" }, "tokio", 1.0))
            .collect();
        let note = disturbed_note(&many, 113);
        assert!(note.contains(": pingpong_same 90, idle 10; "), "{note}");
        assert!(note.len() < 300, "{note}");
    }
}
