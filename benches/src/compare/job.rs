//! One measurement to make (`Job`) and its making on a quiet machine: run in a child, run again
//! when other processes disturbed it, and the ones kept although disturbed noted.

use std::time::{Duration, Instant};

use super::plan::{Size, Workload};
use super::runner::{child_command, run_child, Outcome};
use super::{child, quiet, report};

/// How long one child may take before it is killed.
fn child_limit(size: Size) -> Duration {
    match size {
        Size::Full => Duration::from_secs(180),
        Size::Quick => Duration::from_secs(90),
        Size::Smoke => Duration::from_secs(30),
    }
}

/// One measurement to make, as often as its workload's repetitions say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Job {
    /// The workload.
    pub(super) workload: Workload,
    /// The contender's name.
    pub(super) contender: &'static str,
    /// The server's cores, for a workload that takes them.
    pub(super) cores: Option<usize>,
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
    pub(super) fn title(&self) -> String {
        let cores = self
            .cores
            .map_or(String::new(), |n| format!(" ({})", report::cores_text(n)));
        format!("{} {}{cores}", self.workload.name(), self.contender)
    }
}

/// A measurement kept although other processes used the CPUs meanwhile.
#[derive(Debug, Clone)]
pub(super) struct Disturbed {
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
pub(super) fn measure_quietly(
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

/// The note on the measurements kept although disturbed: each named when they are few (the
/// repetitions of one together), counted by workload when they are many.
pub(super) fn disturbed_note(disturbed: &[Disturbed], measured: usize) -> String {
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
