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
//! the summary (ratios to tickless), the policy table, the targets, the system calls.
//! Progress goes to stderr.

mod child;
mod plan;
mod quiet;
mod report;
mod runner;
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
  --quick      about a minute: smaller counts, fewer repetitions
  --smoke      a few seconds, tiny counts: checks every path runs, measures nothing
  --only       workloads: pingpong_same,pingpong_cross,pingpong_timeout,sleep_precision,idle,timer_churn
  --runtimes   contenders: tickless,tickless_spin50us,tickless_slack1ms,tickless_eager,
               tickless_onidle,tickless_lazy,tokio,smol,monoio_legacy,monoio_uring,threads,floor
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

/// How long, in all, `compare` may wait for other processes to leave the machine alone.
fn quiet_budget(size: Size) -> Duration {
    match size {
        Size::Full => Duration::from_secs(300),
        Size::Quick => Duration::from_secs(120),
        Size::Smoke => Duration::ZERO,
    }
}

/// Runs one measurement on a quiet machine: waits for the machine to be idle, runs the child,
/// and runs it again (twice at most) if other processes used the CPUs meanwhile. A measurement
/// kept although disturbed is named in `disturbed`.
fn measure_quietly(
    size: Size,
    args: &[String],
    budget: &mut Duration,
    disturbed: &mut Vec<String>,
) -> Outcome {
    let run = || match child_command(&[], args) {
        Ok(cmd) => run_child(cmd, child_limit(size)),
        Err(e) => Outcome::Failed(e.to_string()),
    };
    if size == Size::Smoke {
        return run(); // measures nothing: no need to wait
    }
    let attempts = 3;
    let mut last = None;
    for attempt in 1..=attempts {
        quiet::wait_quiet(budget);
        let window = quiet::Window::start();
        let outcome = run();
        let others = window.and_then(|w| w.others()).unwrap_or(0.0);
        if others <= quiet::MAX_OTHERS || !matches!(outcome, Outcome::Done(_)) {
            return outcome;
        }
        eprintln!(
            "  ({} {}: others used {others:.2} CPUs meanwhile{})",
            args[1],
            args[2],
            if attempt < attempts && !budget.is_zero() {
                "; again"
            } else {
                "; kept"
            }
        );
        last = Some((outcome, others));
        if budget.is_zero() {
            break;
        }
    }
    let (outcome, others) = last.expect("at least one attempt");
    disturbed.push(format!("{} {} ({others:.2})", args[1], args[2]));
    outcome
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
    let mut results = Results::default();
    let mut quiet_budget = quiet_budget(opts.size);
    let mut disturbed: Vec<String> = Vec::new();
    let reps = jobs.iter().map(|j| sizes.reps(j.0)).max().unwrap_or(0);
    for rep in 0..reps {
        for &(w, c) in &jobs {
            if rep >= sizes.reps(w) {
                continue;
            }
            let args = [size_arg.clone(), w.name().into(), c.into()];
            let outcome = measure_quietly(opts.size, &args, &mut quiet_budget, &mut disturbed);
            match outcome {
                Outcome::Done(lines) => {
                    for m in lines {
                        eprintln!(
                            "[{}/{}] {} {} {}",
                            rep + 1,
                            sizes.reps(w),
                            w.name(),
                            c,
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
        notes.push(format!(
            "{} measurement(s) kept although other processes used more than {:.2} CPUs during \
             them (after retries, or out of patience): {}",
            disturbed.len(),
            quiet::MAX_OTHERS,
            disturbed.join(", ")
        ));
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
                    let policy = matches!(c, "tickless_eager" | "tickless_onidle");
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
        return failed + http_hello(opts.size) as usize;
    }
    failed
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
        println!("# note: {n}");
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
