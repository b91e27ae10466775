//! `server_tokio_shape`: a small key-value server written the way tokio users write servers
//! (`app.rs`: one `TcpListener`, one accept loop, a task spawned per connection, the map behind
//! `Arc<Mutex<HashMap>>`), run on tokio's multi-thread runtime and on tickless with the same
//! code apart from its imports, and beside them the same connection handler on tickless's own
//! shape (`serve_per_core`: a listener and an accept loop per core).
//!
//! The protocol is a line each way: `GET <key>\n` answered `VALUE <value>\n` or `NONE\n`,
//! `SET <key> <value>\n` answered `OK\n`. The load comes from another process (`client.rs`),
//! started by the server's process once it listens: a few threads, each a tokio current-thread
//! runtime, keep `conns` connections busy with one request in flight each (request, then wait
//! for the answer), 1 `SET` in 10, over 1,000 keys. Each answer is checked.
//!
//! [`measure`] runs one server and its client, and takes from each side what it knows best:
//! the client's requests per second and latency over the measured window, and the server
//! process's own CPU time (`getrusage`) and work per core or worker thread ([`Placement`]) over
//! the same window, which the client marks with a line on its stdout at each end. A server
//! on tickless also registers a probe of its runtime's counters ([`Serving::count_moves`]):
//! how many tasks were placed on, stolen by and I/O objects moved to another core ([`Moves`]),
//! taken at the same two ends.
//!
//! `server_tokio_shape_skew` is the same measurement with a skewed client ([`Plan::hot`]): a
//! few connections keep many requests in flight each, as many as all the others together, so
//! that they carry about half the requests.
//!
//! Where the process may run on twice as many CPUs as the server has cores, the server gets the
//! first `cores` CPUs and the client the next ones, as a load generator on its own machine
//! would; otherwise (two cores on two CPUs) they share every CPU, as `http_load.sh`'s wrk and
//! servers do, and requests per second measure the pair while CPU per request stays the
//! server's own.

pub mod client;

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread;
use std::time::Duration;

use crate::sys;

/// The server's state, shared by every connection: tokio's tutorial's `Db`.
pub type Db = Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>;

/// Answers one request line (its `\n` included or not) into `out`, a line.
pub fn answer(db: &Db, line: &[u8], out: &mut Vec<u8>) {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let mut words = line.splitn(3, |&b| b == b' ');
    match (words.next(), words.next(), words.next()) {
        (Some(b"GET"), Some(key), None) => {
            let db = db.lock().unwrap_or_else(|e| e.into_inner());
            match db.get(key) {
                Some(value) => {
                    out.extend_from_slice(b"VALUE ");
                    out.extend_from_slice(value);
                    out.push(b'\n');
                }
                None => out.extend_from_slice(b"NONE\n"),
            }
        }
        (Some(b"SET"), Some(key), Some(value)) => {
            db.lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key.to_vec(), value.to_vec());
            out.extend_from_slice(b"OK\n");
        }
        _ => out.extend_from_slice(b"ERROR unknown command\n"),
    }
}

/// One worker's counts, in a cache line of its own: each worker writes only its own.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Slot {
    /// Connections whose handler started on this worker.
    conns: AtomicU64,
    /// Requests answered on this worker.
    requests: AtomicU64,
}

/// Where a server's work ran: connections and requests per worker (a tickless core, a tokio
/// worker thread), counted by the connection handler with the worker's index.
#[derive(Debug)]
pub struct Placement {
    /// One per worker.
    slots: Box<[Slot]>,
    /// Counts from an index out of range: any makes the measurement fail.
    stray: AtomicU64,
}

impl Placement {
    /// Counts for `workers` workers, numbered from 0.
    pub fn new(workers: usize) -> Placement {
        Placement {
            slots: (0..workers).map(|_| Slot::default()).collect(),
            stray: AtomicU64::new(0),
        }
    }

    fn slot(&self, worker: usize) -> Option<&Slot> {
        let slot = self.slots.get(worker);
        if slot.is_none() {
            self.stray.fetch_add(1, Ordering::Relaxed);
        }
        slot
    }

    /// A connection's handler started on `worker`.
    pub fn connection(&self, worker: usize) {
        if let Some(s) = self.slot(worker) {
            s.conns.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A request was answered on `worker`.
    pub fn request(&self, worker: usize) {
        if let Some(s) = self.slot(worker) {
            s.requests.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `(connections, requests)` per worker so far.
    ///
    /// # Errors
    ///
    /// A handler counted under a worker index out of range (the glue's index is wrong).
    pub fn counts(&self) -> io::Result<Vec<(u64, u64)>> {
        let stray = self.stray.load(Ordering::Relaxed);
        if stray > 0 {
            return Err(io::Error::other(format!(
                "{stray} counts from a worker index outside 0..{}",
                self.slots.len()
            )));
        }
        Ok(self
            .slots
            .iter()
            .map(|s| {
                (
                    s.conns.load(Ordering::Relaxed),
                    s.requests.load(Ordering::Relaxed),
                )
            })
            .collect())
    }
}

/// One measurement of a server.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The server's cores (tickless) or worker threads (tokio).
    pub cores: usize,
    /// Connections the client keeps busy.
    pub conns: usize,
    /// The client's threads.
    pub client_threads: usize,
    /// Load before the window opens (connections warm, the map filled).
    pub warmup: Duration,
    /// The measured window.
    pub window: Duration,
    /// Connections that carry about half the requests (`server_tokio_shape_skew`); 0: every
    /// connection alike. See [`client::Args::hot`].
    pub hot: usize,
}

/// The CPUs of the server and of the client: `(server, client)`, each `cores` long, where the
/// process may run on at least `2 * cores` CPUs; `None` where they share every CPU.
///
/// # Errors
///
/// The process's CPU mask cannot be read.
pub fn split(cores: usize) -> io::Result<Option<(Vec<usize>, Vec<usize>)>> {
    let cpus = sys::allowed_cpus()?;
    if cores == 0 || cpus.len() < 2 * cores {
        return Ok(None);
    }
    Ok(Some((
        cpus[..cores].to_vec(),
        cpus[cores..2 * cores].to_vec(),
    )))
}

/// Where the server and client of `cores` run, in words, for the report's notes.
pub fn placement_text(cores: usize) -> String {
    match split(cores) {
        Ok(Some((server, client))) => {
            format!("server on CPUs {server:?}, client on CPUs {client:?}")
        }
        Ok(None) => "server and client share the CPUs".into(),
        Err(e) => format!("CPU mask unreadable: {e}"),
    }
}

/// Where a tickless runtime's work moved between cores, summed over its cores: `CoreStats`'s
/// `tasks_placed` (tasks spawned onto another core than the spawner's), `steals` (tasks an
/// idle core took from another's backlog) and `io_rebinds` (I/O objects that followed their
/// task to another core).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Moves {
    /// Tasks placed on another core.
    pub placed: u64,
    /// Tasks stolen.
    pub steals: u64,
    /// I/O objects moved to another core.
    pub rebinds: u64,
}

impl Moves {
    /// What happened between `before` and `self`, two readings of the same counters.
    pub fn since(self, before: Moves) -> Moves {
        Moves {
            placed: self.placed.saturating_sub(before.placed),
            steals: self.steals.saturating_sub(before.steals),
            rebinds: self.rebinds.saturating_sub(before.rebinds),
        }
    }
}

/// Reads a runtime's [`Moves`] so far, from the measuring thread; `None` once the runtime is
/// gone.
type MovesProbe = Box<dyn Fn() -> Option<Moves> + Send + Sync>;

/// What a contender's server gets from [`measure`].
pub struct Serving {
    /// Where the connection handlers ran; the handler counts into it.
    pub seen: Arc<Placement>,
    /// The runtime's counters, if the server registers them before it listens.
    moves: Arc<OnceLock<MovesProbe>>,
    /// Sends the address the server listens on, once it does.
    listening: mpsc::SyncSender<SocketAddr>,
    /// Completes when the measurement is over (the client has exited): the server returns.
    pub stop: tokio::sync::oneshot::Receiver<()>,
}

impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serving")
            .field("seen", &self.seen)
            .field("counts_moves", &self.moves.get().is_some())
            .finish_non_exhaustive()
    }
}

impl Serving {
    /// Registers `probe`, which reads the server's runtime's counters (from another thread,
    /// at each end of the window): the result then has [`Measured::moves`]. Call it before
    /// [`listening`](Self::listening); a second probe is ignored.
    pub fn count_moves(&self, probe: impl Fn() -> Option<Moves> + Send + Sync + 'static) {
        let _ = self.moves.set(Box::new(probe));
    }

    /// The server listens on `addr`: the client may start.
    pub fn listening(&self, addr: SocketAddr) {
        // The receiver waits for this; it is gone only if `measure` itself failed.
        let _ = self.listening.send(addr);
    }
}

/// What a measurement found.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Requests the client completed in the window, per second.
    pub rps: f64,
    /// Median latency seen by the client, µs.
    pub p50_us: f64,
    /// 99th percentile latency seen by the client, µs.
    pub p99_us: f64,
    /// The server process's CPU time (user + system) over the window, per request it answered
    /// meanwhile, µs.
    pub cpu_us_per_req: f64,
    /// Connections per worker (by where each handler started), all of the client's.
    pub conns: Vec<u64>,
    /// Requests per worker over the window.
    pub requests: Vec<u64>,
    /// Where the runtime's work moved over the window, for a server that counts it
    /// ([`Serving::count_moves`]).
    pub moves: Option<Moves>,
    /// The share of the window's requests that the hot connections carried (0 without).
    pub hot_share: f64,
}

impl Measured {
    /// The busiest worker's share of the connections (1 / workers when even, 1 when one
    /// worker has them all).
    pub fn busiest_conn_share(&self) -> f64 {
        busiest_share(&self.conns)
    }

    /// The busiest worker's share of the window's requests.
    pub fn busiest_req_share(&self) -> f64 {
        busiest_share(&self.requests)
    }
}

/// The largest count's share of the total (0 for no counts).
fn busiest_share(counts: &[u64]) -> f64 {
    let total: u64 = counts.iter().sum();
    let max = counts.iter().copied().max().unwrap_or(0);
    if total == 0 {
        0.0
    } else {
        max as f64 / total as f64
    }
}

/// The server process's state at one end of the window.
struct Snapshot {
    /// Its CPU time so far.
    cpu: Duration,
    /// Its counts so far.
    counts: Vec<(u64, u64)>,
    /// Its runtime's counters so far, if it has a probe.
    moves: Option<Moves>,
}

impl Snapshot {
    fn take(seen: &Placement, moves: &OnceLock<MovesProbe>) -> io::Result<Snapshot> {
        Ok(Snapshot {
            cpu: sys::process_cpu()?,
            counts: seen.counts()?,
            moves: moves.get().and_then(|probe| probe()),
        })
    }
}

/// Runs `server` (which builds its runtime, listens, calls [`Serving::listening`] and serves
/// until [`Serving::stop`]) on a thread of its own, then the client as another process
/// (`client(args)` makes its command from [`client::Args`]), and measures.
///
/// The server runs on a fresh thread whose CPU mask (inherited by the runtime's threads) is
/// the server's CPUs of [`split`], when they are split; the caller's mask is left alone.
///
/// # Errors
///
/// The server or the client failed (the client's last line of error output says why), or
/// the server answered nothing in the window.
pub fn measure<S>(
    plan: &Plan,
    client: impl FnOnce(&[String]) -> io::Result<Command> + Send,
    server: S,
) -> io::Result<Measured>
where
    S: FnOnce(Serving) -> io::Result<()> + Send,
{
    let cpus = split(plan.cores)?;
    crate::workload::on_fresh_thread(|| {
        if let Some((server_cpus, _)) = &cpus {
            sys::set_thread_cpus(server_cpus)?;
        }
        let seen = Arc::new(Placement::new(plan.cores));
        let (listening, addr) = mpsc::sync_channel(1);
        let (stop_tx, stop) = tokio::sync::oneshot::channel();
        let moves = Arc::new(OnceLock::new());
        let serving = Serving {
            seen: Arc::clone(&seen),
            moves: Arc::clone(&moves),
            listening,
            stop,
        };
        thread::scope(|s| {
            let served = thread::Builder::new()
                .name("bench-server".into())
                .spawn_scoped(s, || server(serving))?;
            let loaded = match addr.recv() {
                Ok(addr) => {
                    let args = client::Args {
                        addr,
                        conns: plan.conns,
                        threads: plan.client_threads,
                        warmup: plan.warmup,
                        window: plan.window,
                        hot: plan.hot,
                        cpus: cpus.as_ref().map(|c| c.1.clone()),
                    };
                    client(&args.to_args()).and_then(|cmd| load(cmd, &seen, &moves))
                }
                // The server failed before listening: its own error says why.
                Err(_) => Err(io::Error::other("the server did not start")),
            };
            // The client has exited (or never started): the server may stop.
            let _ = stop_tx.send(());
            let served = served
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            served?;
            loaded
        })
    })
}

/// Runs the client and reads its lines, snapshotting the server at each end of the window.
fn load(mut cmd: Command, seen: &Placement, moves: &OnceLock<MovesProbe>) -> io::Result<Measured> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    // Its error output is read meanwhile, so that a full pipe never stalls it.
    let errors = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let (mut before, mut after, mut result) = (None, None, None);
    let mut read_error = None;
    for line in BufReader::new(stdout).lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                read_error = Some(e);
                break;
            }
        };
        match line.as_str() {
            // Errors are kept until the client has exited: it is never left behind.
            client::MEASURING => before = Some(Snapshot::take(seen, moves)),
            client::MEASURED => after = Some(Snapshot::take(seen, moves)),
            l => {
                if let Some(r) = l.strip_prefix(client::RESULT) {
                    result = Some(client::Report::parse(r));
                }
            }
        }
    }
    let status = child.wait()?;
    // Every connection has had an answer by now, so its handler has started.
    let conns: Vec<u64> = seen.counts()?.iter().map(|c| c.0).collect();
    let errors = errors.join().unwrap_or_default();
    if !status.success() {
        return Err(io::Error::other(format!(
            "the client failed ({status}): {}",
            errors.trim().lines().last().unwrap_or("no error output")
        )));
    }
    if let Some(e) = read_error {
        return Err(e);
    }
    let (Some(before), Some(after), Some(report)) = (before, after, result) else {
        return Err(io::Error::other(
            "the client ended without marking its window and reporting",
        ));
    };
    let (before, after, report) = (before?, after?, report?);
    let requests: Vec<u64> = after
        .counts
        .iter()
        .zip(&before.counts)
        .map(|(a, b)| a.1 - b.1)
        .collect();
    let answered: u64 = requests.iter().sum();
    if answered == 0 || report.requests == 0 {
        return Err(io::Error::other("no request was answered in the window"));
    }
    let cpu = after.cpu.saturating_sub(before.cpu);
    Ok(Measured {
        rps: report.requests as f64 / report.window.as_secs_f64(),
        p50_us: report.p50_us,
        p99_us: report.p99_us,
        cpu_us_per_req: cpu.as_secs_f64() * 1e6 / answered as f64,
        conns,
        requests,
        moves: after.moves.zip(before.moves).map(|(a, b)| a.since(b)),
        hot_share: if report.requests == 0 {
            0.0
        } else {
            report.hot_requests as f64 / report.requests as f64
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_the_protocol() {
        let db = Db::default();
        let mut out = Vec::new();
        let mut ask = |line: &[u8]| {
            out.clear();
            answer(&db, line, &mut out);
            String::from_utf8(out.clone()).unwrap()
        };
        assert_eq!(ask(b"GET k1\n"), "NONE\n");
        assert_eq!(ask(b"SET k1 v1\n"), "OK\n");
        assert_eq!(ask(b"GET k1\n"), "VALUE v1\n");
        assert_eq!(
            ask(b"GET k1"),
            "VALUE v1\n",
            "a last line without its newline"
        );
        assert_eq!(ask(b"SET k1 a b\n"), "OK\n", "a value may hold spaces");
        assert_eq!(ask(b"GET k1\n"), "VALUE a b\n");
        assert_eq!(ask(b"GET\n"), "ERROR unknown command\n");
        assert_eq!(ask(b"DEL k1\n"), "ERROR unknown command\n");
        assert_eq!(ask(b"GET k1 extra\n"), "ERROR unknown command\n");
    }

    #[test]
    fn placement_counts_per_worker_and_refuses_strays() {
        let p = Placement::new(2);
        p.connection(0);
        p.connection(0);
        p.connection(1);
        for _ in 0..3 {
            p.request(1);
        }
        assert_eq!(p.counts().unwrap(), [(2, 0), (1, 3)]);
        p.request(2);
        let e = p.counts().unwrap_err();
        assert!(e.to_string().contains("outside 0..2"), "{e}");
    }

    #[test]
    fn shares_of_the_busiest() {
        assert_eq!(busiest_share(&[64, 0]), 1.0);
        assert_eq!(busiest_share(&[32, 32]), 0.5);
        assert_eq!(busiest_share(&[1, 2, 1]), 0.5);
        assert_eq!(busiest_share(&[0, 0]), 0.0);
        assert_eq!(busiest_share(&[]), 0.0);
    }
}
