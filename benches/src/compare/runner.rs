//! Running children: `compare` re-executes itself for each measurement, so that every one
//! starts from a fresh process (no allocator, thread or reactor state left by another runtime).

use std::io;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use super::child::EXIT_SKIP;

/// One result line of a child: labels (non-numeric values, such as `sleep=100us`) and metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measurement {
    /// `key=value` pairs whose value is not a number, in order.
    pub labels: Vec<(String, String)>,
    /// `key=value` pairs whose value is a number, in order.
    pub metrics: Vec<(String, f64)>,
}

impl Measurement {
    /// Parses `key=value key=value ...`: a value that parses as a number is a metric.
    pub fn parse(line: &str) -> Measurement {
        let mut m = Measurement::default();
        for tok in line.split_whitespace() {
            let Some((k, v)) = tok.split_once('=') else {
                continue;
            };
            match v.parse::<f64>() {
                Ok(x) => m.metrics.push((k.to_string(), x)),
                Err(_) => m.labels.push((k.to_string(), v.to_string())),
            }
        }
        m
    }

    /// The labels as they are printed.
    pub fn label_text(&self) -> String {
        self.labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What became of a child.
#[derive(Debug)]
pub enum Outcome {
    /// Its result lines.
    Done(Vec<Measurement>),
    /// It cannot run here; why.
    Skipped(String),
    /// It failed; its error output or what happened.
    Failed(String),
}

/// A command that runs `args` under this executable (for tracing, say) or this executable
/// itself. `wrap` goes before it.
pub fn child_command(wrap: &[String], args: &[String]) -> io::Result<Command> {
    let exe = std::env::current_exe()?;
    let mut cmd = if let Some((first, rest)) = wrap.split_first() {
        let mut c = Command::new(first);
        c.args(rest).arg(exe);
        c
    } else {
        Command::new(exe)
    };
    cmd.arg("__child").args(args);
    Ok(cmd)
}

/// Runs `cmd`, killing it if it takes longer than `limit`.
pub fn run_child(mut cmd: Command, limit: Duration) -> Outcome {
    let child = match cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(format!("cannot start {cmd:?}: {e}")),
    };
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    // The waiting thread blocks in wait(2); this one only in recv_timeout: no polling that
    // could disturb the measurement.
    let waiter = thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(limit) {
        Ok(out) => out,
        Err(_) => {
            // SAFETY: kill(2) with a pid we spawned and have not reaped (the waiter reaps it
            // only once it exits, which is what we ask for).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            let _ = waiter.join();
            return Outcome::Failed(format!("killed after {limit:?}"));
        }
    };
    let _ = waiter.join();
    let out = match output {
        Ok(o) => o,
        Err(e) => return Outcome::Failed(format!("waiting for the child: {e}")),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.trim().is_empty() && out.status.success() {
        eprintln!("{}", stderr.trim_end());
    }
    match out.status.code() {
        Some(0) => Outcome::Done(stdout.lines().map(Measurement::parse).collect()),
        Some(c) if c == i32::from(EXIT_SKIP) => Outcome::Skipped(
            stdout
                .trim()
                .strip_prefix("skip=")
                .unwrap_or(&stdout)
                .to_string(),
        ),
        _ => Outcome::Failed(format!(
            "{}: {}",
            out.status,
            stderr.trim().lines().last().unwrap_or("no error output")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_metrics_the_rest_labels() {
        let m = Measurement::parse("sleep=100us late_p50_us=12.5 late_max_us=1.2e3 junk");
        assert_eq!(m.labels, vec![("sleep".into(), "100us".into())]);
        assert_eq!(
            m.metrics,
            vec![("late_p50_us".into(), 12.5), ("late_max_us".into(), 1200.0)]
        );
        assert_eq!(m.label_text(), "sleep=100us");
    }
}
