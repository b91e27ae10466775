//! The load of `server_tokio_shape`, in a process of its own (`compare __child server_client
//! addr=... conns=... threads=... warmup_us=... window_us=... [hot=...] [cpus=...]`).
//!
//! wrk's shape: a few threads, each an event loop driving many connections (here a tokio
//! current-thread runtime per thread, a task per connection), each connection with one request
//! in flight. One client for every server, so that its cost is the same in every comparison;
//! an event loop, not a thread per connection, so that 64 connections on two CPUs do not cost
//! a context switch per answer; in a process apart from the server, so that the server's
//! `getrusage` counts the server alone.
//!
//! Skewed (`hot=N`, `server_tokio_shape_skew`): N of the connections pipeline, each keeping as
//! many requests in flight as the others hold together divided by N (31 each for 2 of 64), so
//! that the hot ones carry about half the requests (the result's `hot_requests` says how many
//! they did carry). The server sees the same protocol: it answers a connection's lines in order.
//!
//! Stdout, the protocol with [`measure`](super::measure): [`MEASURING`] when the window opens
//! (after the warm-up), [`MEASURED`] when it closes, then one [`RESULT`] line. The window is
//! the main thread's: its ends are marked on time whatever the connections are doing, and a
//! request counts if its answer arrived within it.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Barrier, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::sys;

/// The line that opens the window.
pub const MEASURING: &str = "measuring";
/// The line that closes it.
pub const MEASURED: &str = "measured";
/// The start of the result line.
pub const RESULT: &str = "result ";

/// Keys the requests pick from.
const KEYS: u64 = 1_000;
/// One request in this many is a `SET`.
const SET_EVERY: u64 = 10;
/// How long after the window the client waits for its threads to finish before it gives up
/// (a connection whose answer never comes).
const STALL: Duration = Duration::from_secs(10);

/// Requests each of `hot` connections of `conns` keeps in flight: the others' together (one
/// each), shared among the hot ones, rounded up (at least 1).
pub fn depth(conns: usize, hot: usize) -> usize {
    if hot == 0 {
        return 1;
    }
    conns.saturating_sub(hot).div_ceil(hot).max(1)
}

/// The client's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// The server.
    pub addr: SocketAddr,
    /// Connections, spread over the threads.
    pub conns: usize,
    /// Threads, each a current-thread runtime.
    pub threads: usize,
    /// Load before the window.
    pub warmup: Duration,
    /// The window.
    pub window: Duration,
    /// Hot connections, fewer than `conns`; 0: none. Connections are numbered across the
    /// threads in turn (connection `i` of thread `t` is `i * threads + t`), and those numbered
    /// below `hot` each keep [`Args::depth`] requests in flight, the others one.
    pub hot: usize,
    /// The CPUs the client may run on; `None`: the process's.
    pub cpus: Option<Vec<usize>>,
}

impl Args {
    /// Requests a hot connection keeps in flight: the cold connections' together, shared
    /// among the hot ones (at least 1).
    pub fn depth(&self) -> usize {
        depth(self.conns, self.hot)
    }

    /// Connection `i` of thread `t`: `(requests it keeps in flight, whether it is hot)`.
    fn depth_of(&self, t: usize, i: usize) -> (usize, bool) {
        if i * self.threads + t < self.hot {
            (self.depth(), true)
        } else {
            (1, false)
        }
    }

    /// As `key=value` arguments.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec![
            format!("addr={}", self.addr),
            format!("conns={}", self.conns),
            format!("threads={}", self.threads),
            format!("warmup_us={}", self.warmup.as_micros()),
            format!("window_us={}", self.window.as_micros()),
        ];
        if self.hot > 0 {
            a.push(format!("hot={}", self.hot));
        }
        if let Some(cpus) = &self.cpus {
            let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
            a.push(format!("cpus={}", list.join(",")));
        }
        a
    }

    /// From [`to_args`](Self::to_args)'s arguments.
    ///
    /// # Errors
    ///
    /// `InvalidInput`, naming the argument, for one missing, unknown or malformed, or for no
    /// connection or thread, or for as many hot connections as connections.
    pub fn parse(args: &[String]) -> io::Result<Args> {
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_string());
        let (mut addr, mut conns, mut threads, mut warmup, mut window, mut cpus) =
            (None, None, None, None, None, None);
        let mut hot = 0;
        for a in args {
            let (k, v) = a
                .split_once('=')
                .ok_or_else(|| bad(&format!("client argument {a:?} is not key=value")))?;
            let num = || {
                v.parse::<u64>()
                    .map_err(|_| bad(&format!("client argument {a:?}: not a number")))
            };
            match k {
                "addr" => {
                    addr = Some(
                        v.parse()
                            .map_err(|_| bad(&format!("client argument {a:?}: not an address")))?,
                    );
                }
                "conns" => conns = Some(num()? as usize),
                "threads" => threads = Some(num()? as usize),
                "warmup_us" => warmup = Some(Duration::from_micros(num()?)),
                "window_us" => window = Some(Duration::from_micros(num()?)),
                "hot" => hot = num()? as usize,
                "cpus" => {
                    let list: Result<Vec<usize>, _> = v.split(',').map(str::parse).collect();
                    cpus =
                        Some(list.map_err(|_| bad(&format!("client argument {a:?}: not CPUs")))?);
                }
                _ => return Err(bad(&format!("unknown client argument {a:?}"))),
            }
        }
        let need = |what: &str| bad(&format!("the client needs {what}="));
        let args = Args {
            addr: addr.ok_or_else(|| need("addr"))?,
            conns: conns.ok_or_else(|| need("conns"))?,
            threads: threads.ok_or_else(|| need("threads"))?,
            warmup: warmup.ok_or_else(|| need("warmup_us"))?,
            window: window.ok_or_else(|| need("window_us"))?,
            hot,
            cpus,
        };
        if args.conns == 0 || args.threads == 0 || args.window.is_zero() {
            return Err(bad(
                "the client needs a connection, a thread and a window at least",
            ));
        }
        if args.hot >= args.conns {
            return Err(bad(
                "the client needs fewer hot connections than connections",
            ));
        }
        Ok(args)
    }
}

/// What the client measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    /// Requests answered within the window.
    pub requests: u64,
    /// Of those, the hot connections' (0 without any).
    pub hot_requests: u64,
    /// The window.
    pub window: Duration,
    /// Median latency, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
}

impl Report {
    /// The result line, [`RESULT`] included.
    fn line(&self) -> String {
        format!(
            "{RESULT}requests={} hot_requests={} window_us={} p50_us={} p99_us={}",
            self.requests,
            self.hot_requests,
            self.window.as_micros(),
            self.p50_us,
            self.p99_us
        )
    }

    /// From the result line, [`RESULT`] stripped.
    ///
    /// # Errors
    ///
    /// `InvalidData` if a field is missing or malformed.
    pub fn parse(s: &str) -> io::Result<Report> {
        let field = |k: &str| -> io::Result<f64> {
            s.split_whitespace()
                .find_map(|t| t.strip_prefix(k)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("the client's result has no {k}: {s:?}"),
                    )
                })
        };
        Ok(Report {
            requests: field("requests")? as u64,
            hot_requests: field("hot_requests")? as u64,
            window: Duration::from_micros(field("window_us")? as u64),
            p50_us: field("p50_us")?,
            p99_us: field("p99_us")?,
        })
    }
}

/// The client's main: runs `args` (after `server_client`), writing its lines to stdout.
///
/// # Errors
///
/// Bad arguments, a connection failed, an answer was wrong, or the load stalled.
pub fn main(args: &[String]) -> io::Result<()> {
    let args = Args::parse(args)?;
    run(&args, &mut io::stdout().lock())
}

/// One connection's or thread's share of the window: requests answered, of them on hot
/// connections, and their latencies (ns).
#[derive(Debug, Default)]
struct Share {
    requests: u64,
    hot_requests: u64,
    latencies: Vec<u64>,
}

impl Share {
    fn add(&mut self, other: Share) {
        self.requests += other.requests;
        self.hot_requests += other.hot_requests;
        self.latencies.extend(other.latencies);
    }
}

/// Runs the load, writing the marks and the result to `out`.
///
/// # Errors
///
/// As [`main`].
pub fn run(args: &Args, out: &mut impl Write) -> io::Result<()> {
    if let Some(cpus) = &args.cpus {
        sys::set_thread_cpus(cpus)?; // the threads below inherit it
    }
    // Twice: once all are connected (the main thread then sets the window), once it is set.
    let barrier = Arc::new(Barrier::new(args.threads + 1));
    let window: Arc<OnceLock<(Instant, Instant)>> = Arc::new(OnceLock::new());
    let (tx, rx) = mpsc::channel::<io::Result<Share>>();
    for t in 0..args.threads {
        let n = args.conns / args.threads + usize::from(t < args.conns % args.threads);
        let depths: Vec<(usize, bool)> = (0..n).map(|i| args.depth_of(t, i)).collect();
        let (barrier, window, tx, addr) = (barrier.clone(), window.clone(), tx.clone(), args.addr);
        thread::Builder::new()
            .name(format!("bench-client-{t}"))
            .spawn(move || {
                let connected = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .and_then(|rt| {
                        let streams = rt.block_on(connect(addr, n))?;
                        Ok((rt, streams))
                    });
                // Even after an error: the main thread waits for every thread here.
                barrier.wait();
                barrier.wait();
                let share = connected.and_then(|(rt, streams)| {
                    let (t0, t1) = *window.get().expect("set between the barriers");
                    rt.block_on(drive(streams, &depths, t, t0, t1))
                });
                let _ = tx.send(share);
            })?;
    }
    drop(tx);
    barrier.wait();
    let t0 = Instant::now() + args.warmup;
    let t1 = t0 + args.window;
    window.set((t0, t1)).expect("set once");
    barrier.wait();
    thread::sleep(t0.saturating_duration_since(Instant::now()));
    writeln!(out, "{MEASURING}")?;
    out.flush()?;
    thread::sleep(t1.saturating_duration_since(Instant::now()));
    writeln!(out, "{MEASURED}")?;
    out.flush()?;
    let mut all = Share::default();
    for _ in 0..args.threads {
        let left = (t1 + STALL).saturating_duration_since(Instant::now());
        all.add(rx.recv_timeout(left).map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("a connection had no answer {STALL:?} after the window"),
            )
        })??);
    }
    let Share {
        requests,
        hot_requests,
        mut latencies,
    } = all;
    latencies.sort_unstable();
    let us = |p| crate::stats::percentile_sorted(&latencies, p) as f64 / 1_000.0;
    let report = Report {
        requests,
        hot_requests,
        window: args.window,
        p50_us: us(50.0),
        p99_us: us(99.0),
    };
    writeln!(out, "{}", report.line())?;
    out.flush()
}

/// `n` connections to `addr`, `TCP_NODELAY` on.
async fn connect(addr: SocketAddr, n: usize) -> io::Result<Vec<TcpStream>> {
    let mut streams = Vec::with_capacity(n);
    for _ in 0..n {
        let s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        streams.push(s);
    }
    Ok(streams)
}

/// Loads every connection of a thread until the window closes; `depths[i]`: the requests
/// connection `i` keeps in flight, and whether it is hot.
async fn drive(
    streams: Vec<TcpStream>,
    depths: &[(usize, bool)],
    thread: usize,
    t0: Instant,
    t1: Instant,
) -> io::Result<Share> {
    let tasks: Vec<_> = streams
        .into_iter()
        .zip(depths)
        .enumerate()
        .map(|(i, (s, &(depth, hot)))| {
            let seed = ((thread as u64) << 32 | i as u64).wrapping_add(1);
            tokio::spawn(connection(s, seed, (depth, hot), t0, t1))
        })
        .collect();
    let mut all = Share::default();
    for task in tasks {
        all.add(task.await.map_err(io::Error::other)??);
    }
    Ok(all)
}

/// The next request's `(set, key)` from the connection's generator.
fn next_request(rng: &mut u64) -> (bool, u64) {
    // xorshift64: the same sequence of keys for every server.
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    (((*rng >> 32).is_multiple_of(SET_EVERY)), *rng % KEYS)
}

/// One connection: `depth` requests in flight (1: a request, its answer, the next), each
/// answer checked and replaced by a new request, until an answer comes after `t1`; `hot`: its
/// requests count as the hot connections'. A request's latency runs from the write that sent
/// it to the read of its answer.
async fn connection(
    stream: TcpStream,
    seed: u64,
    (depth, hot): (usize, bool),
    t0: Instant,
    t1: Instant,
) -> io::Result<Share> {
    let mut stream = BufReader::new(stream);
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let (mut request, mut reply) = (Vec::with_capacity(32 * depth), Vec::with_capacity(32));
    // `(set, key, sent)` of each request in flight, oldest first: answers come in order.
    let mut in_flight: VecDeque<(bool, u64, Instant)> = VecDeque::with_capacity(depth);
    let mut share = Share::default();
    loop {
        request.clear();
        let fresh = depth - in_flight.len();
        for _ in 0..fresh {
            let (set, key) = next_request(&mut rng);
            if set {
                writeln!(request, "SET k{key} v{key}")?;
            } else {
                writeln!(request, "GET k{key}")?;
            }
            in_flight.push_back((set, key, t0)); // stamped below, once written
        }
        let sent = Instant::now();
        for r in in_flight.iter_mut().rev().take(fresh) {
            r.2 = sent;
        }
        stream.get_mut().write_all(&request).await?;
        reply.clear();
        if stream.read_until(b'\n', &mut reply).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed a connection",
            ));
        }
        let answered = Instant::now();
        let (set, key, sent) = in_flight.pop_front().expect("a request is in flight");
        check(set, key, &reply)?;
        if answered >= t0 && answered < t1 {
            share.requests += 1;
            share.hot_requests += u64::from(hot);
            let ns = answered.duration_since(sent).as_nanos();
            share.latencies.push(u64::try_from(ns).unwrap_or(u64::MAX));
        }
        if answered >= t1 {
            return Ok(share);
        }
    }
}

/// The answer to `SET k<key> v<key>` or `GET k<key>`: `OK`, or the value every `SET` of that
/// key writes, or `NONE` before the first.
pub(crate) fn check(set: bool, key: u64, reply: &[u8]) -> io::Result<()> {
    let ok = if set {
        reply == b"OK\n"
    } else {
        reply == b"NONE\n" || *reply == *format!("VALUE v{key}\n").as_bytes()
    };
    if ok {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} k{key} answered {:?}",
                if set { "SET" } else { "GET" },
                String::from_utf8_lossy(reply)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 64 connections on 2 threads, `hot` of them hot, on CPUs 2 and 3.
    fn args(hot: usize) -> Args {
        Args {
            addr: "127.0.0.1:4000".parse().unwrap(),
            conns: 64,
            threads: 2,
            warmup: Duration::from_millis(500),
            window: Duration::from_secs(3),
            hot,
            cpus: Some(vec![2, 3]),
        }
    }

    #[test]
    fn arguments_round_trip_and_are_checked() {
        let a = args(0);
        assert_eq!(Args::parse(&a.to_args()).unwrap(), a);
        let without = Args { cpus: None, ..a };
        assert_eq!(Args::parse(&without.to_args()).unwrap(), without);
        let mut zero = without.to_args();
        zero[1] = "conns=0".into();
        assert!(Args::parse(&zero).is_err());
        let mut missing = without.to_args();
        missing.remove(0);
        let e = Args::parse(&missing).unwrap_err();
        assert!(e.to_string().contains("addr="), "{e}");
        let mut unknown = without.to_args();
        unknown.push("rate=9".into());
        assert!(Args::parse(&unknown).is_err());
        let skewed = Args { hot: 2, ..without };
        assert_eq!(Args::parse(&skewed.to_args()).unwrap(), skewed);
        let all_hot = Args { hot: 64, ..skewed };
        let e = Args::parse(&all_hot.to_args()).unwrap_err();
        assert!(e.to_string().contains("hot"), "{e}");
    }

    #[test]
    fn hot_connections_hold_the_cold_ones_in_flight() {
        let a = args(2);
        assert_eq!(a.depth(), 31);
        // Numbered across the threads in turn: the first connection of each thread is hot.
        assert_eq!(a.depth_of(0, 0), (31, true));
        assert_eq!(a.depth_of(1, 0), (31, true));
        assert_eq!(a.depth_of(0, 1), (1, false));
        let in_flight: usize = (0..2)
            .flat_map(|t| (0..32).map(move |i| (t, i)))
            .map(|(t, i)| a.depth_of(t, i).0)
            .sum();
        assert_eq!(in_flight, 62 + 62, "the hot hold as many as the cold");
        let even = args(0);
        assert_eq!(even.depth(), 1);
        assert_eq!(even.depth_of(0, 0), (1, false));
        assert_eq!(args(3).depth(), 21, "61 / 3, rounded up");
    }

    #[test]
    fn report_round_trips() {
        let r = Report {
            requests: 123_456,
            hot_requests: 60_000,
            window: Duration::from_millis(1_500),
            p50_us: 41.5,
            p99_us: 250.25,
        };
        let line = r.line();
        assert_eq!(
            Report::parse(line.strip_prefix(RESULT).unwrap()).unwrap(),
            r
        );
        assert!(Report::parse("requests=1").is_err());
    }

    #[test]
    fn answers_are_checked() {
        assert!(check(true, 7, b"OK\n").is_ok());
        assert!(check(false, 7, b"NONE\n").is_ok());
        assert!(check(false, 7, b"VALUE v7\n").is_ok());
        assert!(check(false, 7, b"VALUE v8\n").is_err());
        assert!(check(true, 7, b"ERROR unknown command\n").is_err());
        assert!(check(false, 7, b"OK\n").is_err());
    }
}
