//! `compare`: every workload on every contender, each measurement in a fresh child process,
//! round-robin over the repetitions (so that a slow minute of the machine hurts every
//! contender alike), then one line per result and the tables.
//!
//! ```text
//! cargo run --release -p tickless-benches --bin compare [-- --quick | --smoke]
//!     [--only WORKLOAD,...] [--runtimes NAME,...] [--cores N,...] [--no-syscalls] [--http]
//! ```
//!
//! Output (stdout): `# ...` notes, one `workload=<w> runtime=<r> [labels] <metric>=<median>
//! ... <metric>_min=... <metric>_max=... runs=<n>` line per result, then markdown sections:
//! the summary (ratios to tickless), the policy table, the targets, the system calls; at the
//! end, `# ` lines again: what the tables' terms mean, and the headline figures in plain words
//! (tickless against tokio). Notes are wrapped at 100 characters, continued on `#   ` lines.
//! Progress goes to stderr, the waits for a quiet machine included.
mod child;
mod job;
pub mod latency;
mod options;
mod plan;
mod procstat;
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

use job::{disturbed_note, measure_quietly, Disturbed, Job};
use options::{parse_options, quiet_budget, Options};
use runner::{child_command, run_child, Outcome};

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

/// Runs the comparison; returns how many measurements failed.
fn run(opts: &Options) -> usize {
    let started = Instant::now();
    let sizes = opts.size.sizes();
    let mut notes: Vec<String> = Vec::new();
    let mut failed = 0;

    // The jobs, in report order.
    let mut jobs: Vec<Job> = Vec::new();
    for w in Workload::ALL {
        if !opts.only.is_empty() && !opts.only.contains(&w) {
            continue;
        }
        let cores: Vec<Option<usize>> = if w.takes_cores() {
            opts.cores.iter().copied().map(Some).collect()
        } else {
            vec![None]
        };
        for &n in &cores {
            for &c in w.contenders() {
                if opts.runtimes.is_empty() || opts.runtimes.iter().any(|r| r == c) {
                    jobs.push(Job {
                        workload: w,
                        contender: c,
                        cores: n,
                    });
                }
            }
        }
    }
    // Where each core count's server and client run.
    let cores = if jobs.iter().any(|j| j.cores.is_some()) {
        opts.cores.as_slice()
    } else {
        &[]
    };
    for &n in cores {
        let plan = sizes.server.plan(n, 0);
        notes.push(format!(
            "server_tokio_shape at {}: {} connections, a client of {} threads (tokio \
             current-thread runtimes, in a process of its own); {}",
            report::cores_text(n),
            plan.conns,
            plan.client_threads,
            crate::workload::server::placement_text(n)
        ));
        if jobs
            .iter()
            .any(|j| j.workload == Workload::ServerTokioShapeSkew)
        {
            let skew = sizes.server.plan(n, plan::HOT);
            notes.push(format!(
                "server_tokio_shape_skew at {}: the same, but {} of the connections keep {} \
                 requests in flight each (as many as the others together): about half the \
                 requests (hot_req_share: the share they carried)",
                report::cores_text(n),
                skew.hot,
                crate::workload::server::client::depth(skew.conns, skew.hot)
            ));
        }
    }

    // Contenders that may not run here (io_uring disabled, say) are probed once.
    let mut unavailable: Vec<&str> = Vec::new();
    for c in ["monoio_legacy", "monoio_uring"] {
        if !jobs.iter().any(|j| j.contender == c) {
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
    jobs.retain(|j| !unavailable.contains(&j.contender));

    // Round-robin: every job once per repetition.
    let total: usize = jobs.iter().map(|j| sizes.reps(j.workload)).sum();
    eprintln!(
        "compare: {total} measurements ({}), each in a fresh process{}; progress here, the \
         report on stdout at the end",
        sizes.reps_text(),
        if opts.size == Size::Smoke {
            String::new()
        } else {
            format!(
                " once the machine is quiet ({} s of waiting at most in all)",
                quiet_budget(opts).as_secs()
            )
        }
    );
    let mut started_jobs = 0;
    let mut results = Results::default();
    let mut patience = quiet::Patience::new(quiet_budget(opts));
    let mut disturbed: Vec<Disturbed> = Vec::new();
    let mut measured = 0;
    let reps = jobs
        .iter()
        .map(|j| sizes.reps(j.workload))
        .max()
        .unwrap_or(0);
    for rep in 0..reps {
        for job in &jobs {
            let (w, c) = (job.workload, job.contender);
            if rep >= sizes.reps(w) {
                continue;
            }
            started_jobs += 1;
            let (outcome, others) = measure_quietly(opts.size, job, &mut patience, &mut disturbed);
            let disturbed_by = others.map_or(String::new(), |o| {
                format!(", disturbed: others used {o:.2} CPUs")
            });
            match outcome {
                Outcome::Done(lines) => {
                    measured += 1;
                    for mut m in lines {
                        if let Some(n) = job.cores {
                            // A label, so that each core count is a result of its own.
                            m.labels.insert(0, ("cores".into(), n.to_string()));
                        }
                        eprintln!(
                            "[{started_jobs}/{total}] {} (run {} of {}{disturbed_by}) {}",
                            job.title(),
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
                    let note = format!("{} skipped: {why}", job.title());
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                }
                Outcome::Failed(why) => {
                    failed += 1;
                    eprintln!("[{}] {} FAILED: {why}", rep + 1, job.title());
                    notes.push(format!("{} run {} failed: {why}", job.title(), rep + 1));
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
                for &Job {
                    workload: w,
                    contender: c,
                    ..
                } in &jobs
                {
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

    if !jobs.is_empty() {
        print_report(opts, &results, &syscall_results, &notes, started.elapsed());
    } else {
        for n in &notes {
            for l in report::wrap(n, "# note: ", "#   ", summary::WIDTH) {
                println!("{l}");
            }
        }
    }
    if opts.only.is_empty() || opts.only.contains(&Workload::Latency) {
        failed += latency(opts.size);
    }
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

/// The `latency` workload (`latency/`): its notes and lines; returns how many of its
/// measurements failed. The charts go to `benches/results/` except in smoke runs.
fn latency(size: Size) -> usize {
    let plots = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/results"));
    let began = Instant::now();
    let report = latency::run(size, (size != Size::Smoke).then_some(plots));
    println!();
    println!(
        "# latency: took={:.0}s (open loop; charts in benches/results/latency_*.svg)",
        began.elapsed().as_secs_f64()
    );
    for n in &report.notes {
        for l in report::wrap(n, "# note: ", "#   ", summary::WIDTH) {
            println!("{l}");
        }
    }
    for l in &report.lines {
        println!("{l}");
    }
    report.failed
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
