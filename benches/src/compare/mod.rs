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
pub mod latency;
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
    /// `server_tokio_shape`'s core counts, each measured apart.
    cores: Vec<usize>,
    /// Count system calls.
    syscalls: bool,
    /// Also run the `http_hello` workload (hyper under wrk, through `scripts/http_load.sh`).
    http: bool,
    /// How long to spend on other processes' account (`--patience`); `None`: the size's.
    patience: Option<Duration>,
}

const USAGE: &str = "usage: compare [--quick | --smoke] [--only WORKLOAD,...] \
[--runtimes NAME,...] [--cores N,...] [--no-syscalls] [--http] [--patience SECONDS]
  --quick      about 1.5 minutes (up to 2 more waiting on a busy machine): smaller counts,
               fewer repetitions
  --smoke      a few seconds, tiny counts: checks every path runs, measures nothing
  --only       workloads: pingpong_same,pingpong_cross,pingpong_timeout,sleep_precision,idle,
               timer_churn,server_tokio_shape,server_tokio_shape_skew (2 connections carry
               half the requests),latency (open-loop latency against load: see
               benches/README.md; charts in benches/results/latency_*.svg)
  --runtimes   contenders: tickless,tickless_spin50us,tickless_slack1ms,tickless_slack0,
               tickless_slack10us,tickless_slack100us,tickless_prop4,tickless_prop16,
               tickless_prop64,tickless_knee8ms,
               tickless_eager,tickless_onidle,tickless_lazy,tickless_epoll,
               tickless_epoll_onidle,tickless_nolead,tickless_per_core,tickless_nosteal,
               tickless_unpinned,tickless_unpinned_nogov,tickless_unpinned_spin50us,tokio,smol,
               monoio_legacy,monoio_uring,threads,floor
  --cores      server_tokio_shape's cores (tickless) and workers (tokio), each count measured
               apart: 1,2,4,8,16 for a scaling curve (default 2)
  --no-syscalls  skip the strace count
  --http       also run http_hello: tickless's and tokio's hyper servers under wrk
               (benches/scripts/http_load.sh; builds the examples, installs wrk if missing)
  --patience   seconds to spend, in all, waiting for a quiet machine and re-running disturbed
               measurements (default 120 with --quick, 300 without); 0 measures at once, the
               disturbed measurements noted as such (to see what other load does)";

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        size: Size::Full,
        only: Vec::new(),
        runtimes: Vec::new(),
        cores: Vec::new(),
        syscalls: true,
        http: false,
        patience: None,
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
            "--cores" => {
                let v = it.next().ok_or("--cores needs a list")?;
                for n in v.split(',') {
                    let cores = n
                        .parse::<usize>()
                        .ok()
                        .filter(|&c| (1..=1024).contains(&c))
                        .ok_or(format!("--cores: {n:?} is not a core count from 1 to 1024"))?;
                    if !o.cores.contains(&cores) {
                        o.cores.push(cores);
                    }
                }
            }
            "--patience" => {
                let v = it.next().ok_or("--patience needs seconds")?;
                let s = v
                    .parse::<u64>()
                    .map_err(|e| format!("--patience {v:?}: {e}"))?;
                o.patience = Some(Duration::from_secs(s));
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if o.cores.is_empty() {
        o.cores.push(plan::DEFAULT_CORES);
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
fn quiet_budget(opts: &Options) -> Duration {
    if let Some(p) = opts.patience {
        return p;
    }
    match opts.size {
        Size::Full => Duration::from_secs(300),
        Size::Quick => Duration::from_secs(120),
        Size::Smoke => Duration::ZERO,
    }
}

/// One measurement to make, as often as its workload's repetitions say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Job {
    /// The workload.
    workload: Workload,
    /// The contender's name.
    contender: &'static str,
    /// The server's cores, for a workload that takes them.
    cores: Option<usize>,
}

impl Job {
    /// The child's arguments.
    fn args(&self, size: Size) -> Vec<String> {
        let mut args = vec![
            child::size_name(size).to_string(),
            self.workload.name().into(),
            self.contender.into(),
        ];
        if let Some(n) = self.cores {
            args.push(format!("cores={n}"));
        }
        args
    }

    /// `server_tokio_shape tickless (2 cores)`, for progress and notes.
    fn title(&self) -> String {
        let cores = self
            .cores
            .map_or(String::new(), |n| format!(" ({})", report::cores_text(n)));
        format!("{} {}{cores}", self.workload.name(), self.contender)
    }
}

/// A measurement kept although other processes used the CPUs meanwhile.
#[derive(Debug, Clone)]
struct Disturbed {
    /// `Job::title`'s workload part (with its cores, if any).
    workload: String,
    /// The contender.
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
    job: &Job,
    patience: &mut quiet::Patience,
    disturbed: &mut Vec<Disturbed>,
) -> (Outcome, Option<f64>) {
    let args = job.args(size);
    let run = || match child_command(&[], &args) {
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
            "  ({}: other processes used {others:.2} CPUs meanwhile: measuring again; {})",
            job.title(),
            patience.left_text()
        );
    }
    let (outcome, others) = last.expect("at least one attempt");
    let cores = job
        .cores
        .map_or(String::new(), |n| format!(" ({})", report::cores_text(n)));
    disturbed.push(Disturbed {
        workload: format!("{}{cores}", job.workload.name()),
        runtime: job.contender.into(),
        others,
    });
    (outcome, Some(others))
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

/// The `latency` workload (`latency.rs`): its notes and lines; returns how many of its
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
    fn cores_are_parsed_deduplicated_and_checked() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = parse_options(&args(&[])).unwrap();
        assert_eq!(o.cores, [plan::DEFAULT_CORES]);
        let o = parse_options(&args(&["--cores", "1,2,4,2,16"])).unwrap();
        assert_eq!(o.cores, [1, 2, 4, 16]);
        for bad in ["0", "two", "1,,2", "2000"] {
            let e = parse_options(&args(&["--cores", bad])).unwrap_err();
            assert!(e.contains("--cores"), "{bad}: {e}");
        }
        assert!(parse_options(&args(&["--cores"])).is_err());
    }

    #[test]
    fn patience_overrides_the_sizes_budget() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = parse_options(&args(&["--quick"])).unwrap();
        assert_eq!(quiet_budget(&o), Duration::from_secs(120));
        let o = parse_options(&args(&["--quick", "--patience", "0"])).unwrap();
        assert_eq!(quiet_budget(&o), Duration::ZERO);
        assert!(parse_options(&args(&["--patience", "soon"])).is_err());
        assert!(parse_options(&args(&["--patience"])).is_err());
    }

    #[test]
    fn server_jobs_carry_their_cores() {
        let job = Job {
            workload: Workload::ServerTokioShape,
            contender: "tokio",
            cores: Some(1),
        };
        assert_eq!(
            job.args(Size::Smoke),
            ["smoke", "server_tokio_shape", "tokio", "cores=1"]
        );
        assert_eq!(job.title(), "server_tokio_shape tokio (1 core)");
        let job = Job {
            workload: Workload::Idle,
            contender: "smol",
            cores: None,
        };
        assert_eq!(job.args(Size::Quick), ["quick", "idle", "smol"]);
        assert_eq!(job.title(), "idle smol");
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
