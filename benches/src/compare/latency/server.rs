//! The server under test: the parent's handle on its process (started, its CPU and waits
//! read, stopped), and the child's main that serves.

use std::io::{self, BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::thread;
use std::time::Duration;

use super::{Placement, Shape};
use crate::compare::procstat;
use crate::compare::runner::child_command;

/// A server process under test.
pub(super) struct Server {
    child: Child,
    pub(super) addr: SocketAddr,
}

impl Server {
    /// Starts `shape` on `runtime` with `cores` cores or workers, pinned to the server's CPU
    /// when `placement` is dedicated.
    pub(super) fn start(
        shape: Shape,
        runtime: &str,
        cores: usize,
        placement: &Placement,
    ) -> io::Result<Server> {
        let mut args = vec![
            SERVER.to_string(),
            shape.name().into(),
            runtime.into(),
            format!("cores={cores}"),
        ];
        if let Placement::Dedicated { server, .. } = placement {
            args.push(format!("cpu={server}"));
        }
        let mut child = child_command(&[], &args)?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        BufReader::new(stdout).read_line(&mut line)?;
        let addr = line
            .trim()
            .strip_prefix("listening=")
            .and_then(|a| a.parse().ok());
        match addr {
            Some(addr) => Ok(Server { child, addr }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(io::Error::other(format!(
                    "the {} server on {runtime} did not start (said {line:?})",
                    shape.name()
                )))
            }
        }
    }

    /// Its CPU time so far (user + system, every thread), and the time its threads waited
    /// for a CPU so far.
    pub(super) fn usage(&self) -> Usage {
        Usage {
            cpu: procstat::proc_cpu(self.child.id()),
            wait: procstat::proc_wait(self.child.id()),
            gen_wait: procstat::thread_wait(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.child.stdin.take()); // it exits when its standard input closes
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Readings at one end of a measurement's window (`None`: `/proc` could not say).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Usage {
    /// The server's CPU time.
    pub(super) cpu: Option<Duration>,
    /// The time the server's threads waited for a CPU.
    pub(super) wait: Option<Duration>,
    /// The time the generator's thread (the caller) waited for a CPU.
    pub(super) gen_wait: Option<Duration>,
}

/// The server child's subcommand: `compare __child latency_server <shape> <runtime> cores=N
/// [cpu=K]`.
pub const SERVER: &str = "latency_server";

/// The server child's main (`args` after [`SERVER`]): pins itself to `cpu` if given, serves
/// on `cores` cores or workers, prints `listening=<addr>`, and exits when its standard input
/// closes (the parent is done with it, or gone).
///
/// # Errors
///
/// Bad arguments, pinning, or the server failed.
pub fn serve_main(args: &[String]) -> io::Result<()> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("usage: {SERVER} <shape> <tokio|tickless> cores=N [cpu=K]; got {args:?}"),
        )
    };
    let [shape, runtime, rest @ ..] = args else {
        return Err(bad());
    };
    let shape = Shape::named(shape).ok_or_else(bad)?;
    let (mut cores, mut cpu) = (None, None);
    for a in rest {
        if let Some(n) = a.strip_prefix("cores=") {
            cores = Some(n.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(bad)?);
        } else if let Some(n) = a.strip_prefix("cpu=") {
            cpu = Some(n.parse::<usize>().map_err(|_| bad())?);
        } else {
            return Err(bad());
        }
    }
    let cores = cores.ok_or_else(bad)?;
    if let Some(cpu) = cpu {
        crate::sys::pin_current_thread(cpu)?; // every thread started from here inherits it
    }
    thread::Builder::new()
        .name("stdin-watch".into())
        .spawn(|| {
            // A `histograms` line asks for the tickless loop histograms so far (one line
            // back, `loop_histograms ...` or `loop_histograms off`), a `stats` line for its
            // counters (`stats ...` or `stats off`); the end of input stops.
            for line in io::stdin().lines() {
                let Ok(line) = line else { break };
                let answer = match line.trim() {
                    "histograms" => crate::rt::tickless::serving::loop_histograms()
                        .unwrap_or_else(|| "loop_histograms off".into()),
                    "stats" => {
                        crate::rt::tickless::serving::stats().unwrap_or_else(|| "stats off".into())
                    }
                    _ => continue,
                };
                let mut out = io::stdout().lock();
                let _ = writeln!(out, "{answer}");
                let _ = out.flush();
            }
            std::process::exit(0);
        })?;
    let listening = |addr: SocketAddr| {
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "listening={addr}");
        let _ = out.flush();
    };
    use crate::rt::{tickless::serving as tl, tokio::serving as tk};
    match (shape, runtime.as_str()) {
        (Shape::HttpHello, "tickless") => tl::http_hello(cores, listening),
        (Shape::HttpHello, "tokio") => tk::http_hello(cores, listening),
        (Shape::KvTokioShape, "tickless") => tl::kv_tokio_shape(cores, listening),
        (Shape::KvTokioShape, "tokio") => tk::kv_tokio_shape(cores, listening),
        (Shape::KvPerCore, "tickless") => tl::kv_per_core(cores, listening),
        _ => Err(bad()),
    }
}
