//! One run of the generator: connect, load on the schedule (or closed-loop), record.
//!
//! # Design
//!
//! One thread drives every connection through one epoll instance (level-triggered, a
//! connection per registration). Between sends it sleeps in `epoll_pwait2` with a nanosecond
//! timeout (the thread's timer slack set to 1 ns) up to [`Config::spin`] before the next
//! scheduled instant, then polls epoll without blocking until that instant: a send leaves within
//! a few µs of its time while the client sleeps whenever the next one is far. Each answer is
//! stamped with the time `epoll_pwait2` returned, so that handling the other connections ready
//! at the same moment adds nothing to its latency. Sockets are non-blocking with `TCP_NODELAY`;
//! a request is one `write`, a response read until the parser has all of it.
//!
//! Why not one blocking thread per connection: 64 threads on the client's one CPU would add
//! the scheduler's wakeup latency to every answer and their switches to every send. Why not
//! tokio current-thread: its timer has 1 ms resolution, so sends would be up to a millisecond
//! late unless spun by hand around it, and its reactor adds a wake and a poll per answer.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::pacer::{self, Pacer};
use super::proto::{Protocol, Speaker};
use super::schedule::{schedule, Arrivals};

/// How requests are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// On a schedule at `rate` per second, whatever the server does.
    Open {
        /// Requests per second, over all connections.
        rate: f64,
        /// The gaps' distribution.
        arrivals: Arrivals,
    },
    /// Each connection sends its next request when the last is answered: the most the server
    /// and this client manage together (a throughput, not a latency measurement).
    Closed,
}

/// One run's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The server (loopback only).
    pub addr: SocketAddr,
    /// What to say.
    pub protocol: Protocol,
    /// Connections.
    pub conns: usize,
    /// How requests are paced.
    pub pacing: Pacing,
    /// Load before the window (not recorded).
    pub warmup: Duration,
    /// The recorded window.
    pub window: Duration,
    /// The schedule's seed.
    pub seed: u64,
    /// How long before a send the generator stops sleeping and polls.
    pub spin: Duration,
    /// How long after the last scheduled send the generator waits for answers before it gives
    /// up on the rest.
    pub drain: Duration,
}

/// When the recorded window opens and closes, for the caller's snapshots (the server's CPU
/// time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The window opens.
    Opens,
    /// The window closes.
    Closes,
}

/// What a run measured.
#[derive(Debug)]
pub struct Outcome {
    /// Latency of the window's requests, ns: from the scheduled send (open loop) or the send
    /// (closed loop) to the end of the answer.
    pub latency: Histogram<u64>,
    /// How long after it was ready each window request was sent, ns (open loop).
    pub send_late: Histogram<u64>,
    /// Requests per second the schedule offered in the window (0 in closed loop).
    pub offered_rps: f64,
    /// Answers that came within the window, per second of it.
    pub achieved_rps: f64,
    /// Window requests answered.
    pub answered: u64,
    /// Window requests never answered (given up on after the drain time).
    pub unanswered: u64,
    /// Window requests the generator sent more than 1 ms after they were ready.
    pub late_sends: u64,
    /// Per millisecond of the window, the worst latency of the requests scheduled in it, ns
    /// (open loop; empty in closed loop).
    pub timeline: Vec<u64>,
    /// Per millisecond of the window, the longest the generator held a request due in it
    /// after it was ready, ns (open loop).
    pub timeline_late: Vec<u64>,
    /// Per millisecond of the window, how many of the requests scheduled in it waited over
    /// 1 ms (open loop).
    pub timeline_slow: Vec<u64>,
    /// When the window opened, on `CLOCK_MONOTONIC` (ns; perf's `-k mono` clock), for lining
    /// the timeline up with a trace (0 in closed loop).
    pub window_mono_ns: u64,
}

impl Outcome {
    /// The latency at quantile `q` (0 to 1), µs.
    pub fn latency_us(&self, q: f64) -> f64 {
        self.latency.value_at_quantile(q) as f64 / 1_000.0
    }

    /// The share of the window's requests sent more than 1 ms late by the generator.
    pub fn late_share(&self) -> f64 {
        let n = self.answered + self.unanswered;
        if n == 0 {
            0.0
        } else {
            self.late_sends as f64 / n as f64
        }
    }
}

/// A connection.
struct Conn {
    stream: TcpStream,
    speaker: Speaker,
    /// Bytes received and not yet parsed.
    buf: Vec<u8>,
    /// The request being written.
    req: Vec<u8>,
    /// When its request in flight was sent (closed loop), ns.
    sent: u64,
}

impl Conn {
    fn send(&mut self) -> io::Result<()> {
        self.speaker.request(&mut self.req);
        match self.stream.write(&self.req) {
            Ok(n) if n == self.req.len() => Ok(()),
            // A request is a few dozen bytes on a connection with nothing else unsent: a
            // short write means the server stopped reading, and the measurement is void.
            Ok(n) => Err(io::Error::other(format!(
                "short write ({n} of {} bytes): the server is not reading",
                self.req.len()
            ))),
            Err(e) => Err(e),
        }
    }

    /// Reads what has arrived into `buf`; responses are taken off it one at a time by `take`.
    fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 4096];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed a connection",
                    ))
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    if n < chunk.len() {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Takes one whole response off `buf`, if there is one.
    fn take(&mut self) -> io::Result<bool> {
        match self.speaker.response(&self.buf) {
            Ok(None) => Ok(false),
            Ok(Some(r)) if r.status == 200 => {
                self.buf.drain(..r.len);
                Ok(true)
            }
            Ok(Some(r)) => Err(io::Error::other(format!(
                "the server answered {}",
                r.status
            ))),
            Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e)),
        }
    }
}

/// An epoll instance.
struct Epoll(OwnedFd);

impl Epoll {
    fn new() -> io::Result<Epoll> {
        // SAFETY: epoll_create1 takes a flag and returns a new descriptor or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a descriptor we just opened and own.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn add(&self, fd: &impl AsRawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
            u64: token,
        };
        // SAFETY: both descriptors are open; `ev` is a valid event for the kernel to copy.
        let rc = unsafe {
            libc::epoll_ctl(
                self.0.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                fd.as_raw_fd(),
                &mut ev,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits up to `timeout` (zero: a poll), filling `events`; returns how many are ready.
    fn wait(&self, events: &mut [libc::epoll_event], timeout: Duration) -> io::Result<usize> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
        };
        let max = libc::c_int::try_from(events.len()).unwrap_or(libc::c_int::MAX);
        // SAFETY: `events` has room for `max` events; `ts` is a valid timespec; no sigmask.
        let rc = unsafe {
            libc::epoll_pwait2(
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                max,
                &ts,
                std::ptr::null(),
            )
        };
        if rc >= 0 {
            return Ok(rc as usize);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => Ok(0),
            Some(libc::ENOSYS) => {
                // A kernel before 5.11: millisecond timeouts, rounded down (the spin covers
                // the rest).
                let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
                // SAFETY: as above.
                let rc =
                    unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), max, ms) };
                if rc >= 0 {
                    Ok(rc as usize)
                } else {
                    Err(io::Error::last_os_error())
                }
            }
            _ => Err(e),
        }
    }
}

/// Asks the kernel to wake this thread's timed waits on time (the default slack is 50 µs).
fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer; it affects the calling thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Runs `cfg` on the calling thread (pin it first where it must not share a CPU), calling
/// `mark` as the window opens and closes.
///
/// # Errors
///
/// A connection failed, the server answered something other than a success, or closed a
/// connection.
pub fn run(cfg: &Config, mark: &mut dyn FnMut(Mark)) -> io::Result<Outcome> {
    if !cfg.addr.ip().is_loopback() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the generator loads loopback addresses only, not {}",
                cfg.addr
            ),
        ));
    }
    if cfg.conns == 0 || cfg.window.is_zero() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a connection and a window at least",
        ));
    }
    tighten_timer_slack();
    let epoll = Epoll::new()?;
    let host = cfg.addr.to_string();
    let mut conns = Vec::with_capacity(cfg.conns);
    for i in 0..cfg.conns {
        let stream = TcpStream::connect(cfg.addr)?;
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        epoll.add(&stream, i as u64)?;
        conns.push(Conn {
            stream,
            speaker: Speaker::new(&cfg.protocol, &host, cfg.seed ^ (i as u64 + 1)),
            buf: Vec::with_capacity(4096),
            req: Vec::with_capacity(128),
            sent: 0,
        });
    }
    let w0 = cfg.warmup.as_nanos() as u64;
    let w1 = w0 + cfg.window.as_nanos() as u64;
    match cfg.pacing {
        Pacing::Open { rate, arrivals } => {
            let times = schedule(arrivals, rate, cfg.warmup + cfg.window, cfg.seed);
            let mut pacer = Pacer::new(times, cfg.conns, (w0, w1));
            let offered = pacer.in_window() as f64 / cfg.window.as_secs_f64();
            let (t0, t0_mono) = (Instant::now(), mono_ns());
            let done = open_loop(cfg, t0, &epoll, &mut conns, &mut pacer, (w0, w1), mark)?;
            Ok(Outcome {
                offered_rps: offered,
                achieved_rps: done as f64 / cfg.window.as_secs_f64(),
                answered: pacer.answered,
                unanswered: pacer.unanswered,
                late_sends: pacer.late_sends,
                latency: pacer.latency,
                send_late: pacer.send_late,
                timeline: pacer.timeline,
                timeline_late: pacer.timeline_late,
                timeline_slow: pacer.timeline_slow,
                window_mono_ns: t0_mono + w0,
            })
        }
        Pacing::Closed => closed_loop(cfg, &epoll, &mut conns, (w0, w1), mark),
    }
}

/// Calls `mark` for the window's ends passed by `now`.
fn marks(now: u64, window: (u64, u64), state: &mut u8, mark: &mut dyn FnMut(Mark)) {
    if *state == 0 && now >= window.0 {
        *state = 1;
        mark(Mark::Opens);
    }
    if *state == 1 && now >= window.1 {
        *state = 2;
        mark(Mark::Closes);
    }
}

/// `CLOCK_MONOTONIC` now, ns (what `Instant` reads on Linux).
fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The open-loop run from `t0`; returns the answers that came within the window.
fn open_loop(
    cfg: &Config,
    t0: Instant,
    epoll: &Epoll,
    conns: &mut [Conn],
    pacer: &mut Pacer,
    window: (u64, u64),
    mark: &mut dyn FnMut(Mark),
) -> io::Result<u64> {
    let ns = || t0.elapsed().as_nanos() as u64;
    let give_up_at = window.1 + cfg.drain.as_nanos() as u64;
    let spin = cfg.spin.as_nanos() as u64;
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; conns.len().max(1)];
    let mut send = Vec::with_capacity(conns.len());
    let (mut state, mut in_window) = (0u8, 0u64);
    loop {
        let now = ns();
        marks(now, window, &mut state, mark);
        send.clear();
        pacer.release(now, &mut send);
        for &c in &send {
            conns[c].send()?;
        }
        if pacer.done() && state == 2 {
            return Ok(in_window);
        }
        if now >= give_up_at {
            pacer.give_up(now);
            marks(u64::MAX, window, &mut state, mark);
            return Ok(in_window);
        }
        let next = [
            pacer.next_due(),
            Some(window.0),
            Some(window.1),
            Some(give_up_at),
        ]
        .into_iter()
        .flatten()
        .filter(|&t| t > now)
        .min()
        .unwrap_or(give_up_at);
        let sleep = next.saturating_sub(now).saturating_sub(spin);
        let n = epoll.wait(&mut events, Duration::from_nanos(sleep))?;
        let answered_at = ns();
        for ev in &events[..n] {
            let c = ev.u64 as usize;
            let conn = &mut conns[c];
            conn.fill()?;
            while conn.take()? {
                if answered_at >= window.0 && answered_at < window.1 {
                    in_window += 1;
                }
                if pacer.answered(c, answered_at) {
                    conn.send()?;
                }
            }
        }
    }
}

/// The closed-loop run.
fn closed_loop(
    cfg: &Config,
    epoll: &Epoll,
    conns: &mut [Conn],
    window: (u64, u64),
    mark: &mut dyn FnMut(Mark),
) -> io::Result<Outcome> {
    let t0 = Instant::now();
    let ns = || t0.elapsed().as_nanos() as u64;
    let give_up_at = window.1 + cfg.drain.as_nanos() as u64;
    let mut latency = pacer::histogram();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; conns.len()];
    let mut state = 0u8;
    let mut busy = conns.len();
    for conn in conns.iter_mut() {
        conn.sent = ns();
        conn.send()?;
    }
    while busy > 0 {
        let now = ns();
        marks(now, window, &mut state, mark);
        if now >= give_up_at {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "{busy} connections had no answer {:?} after the window",
                    cfg.drain
                ),
            ));
        }
        let until = match state {
            0 => window.0,
            1 => window.1,
            _ => give_up_at,
        };
        let wait = until.saturating_sub(now);
        let n = epoll.wait(&mut events, Duration::from_nanos(wait.max(1)))?;
        let at = ns();
        for ev in &events[..n] {
            let conn = &mut conns[ev.u64 as usize];
            conn.fill()?;
            while conn.take()? {
                if conn.sent >= window.0 && at < window.1 {
                    latency.saturating_record((at - conn.sent).max(1));
                }
                if at < window.1 {
                    conn.sent = at;
                    conn.send()?;
                } else {
                    busy -= 1;
                }
            }
        }
    }
    marks(u64::MAX, window, &mut state, mark);
    let answered = latency.len();
    Ok(Outcome {
        latency,
        send_late: pacer::histogram(),
        offered_rps: 0.0,
        achieved_rps: answered as f64 / cfg.window.as_secs_f64(),
        answered,
        unanswered: 0,
        late_sends: 0,
        timeline: Vec::new(),
        timeline_late: Vec::new(),
        timeline_slow: Vec::new(),
        window_mono_ns: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;

    /// A blocking HTTP server on a thread per connection: every request head answered with the
    /// hello response, until the client closes.
    fn http_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { return };
                thread::spawn(move || {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    loop {
                        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            buf.drain(..end + 4);
                            let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello";
                            if s.write_all(answer).is_err() {
                                return;
                            }
                        }
                        match s.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                });
            }
        });
        addr
    }

    fn config(addr: SocketAddr, pacing: Pacing) -> Config {
        Config {
            addr,
            protocol: Protocol::Http { path: "/".into() },
            conns: 4,
            pacing,
            warmup: Duration::from_millis(20),
            window: Duration::from_millis(100),
            seed: 5,
            spin: Duration::from_micros(20),
            drain: Duration::from_secs(10),
        }
    }

    #[test]
    fn every_scheduled_request_is_sent_answered_and_recorded_once() {
        let addr = http_server();
        let pacing = Pacing::Open {
            rate: 2_000.0,
            arrivals: Arrivals::Uniform,
        };
        let mut marks = Vec::new();
        let o = run(&config(addr, pacing), &mut |m| marks.push(m)).unwrap();
        // 2,000/s evenly over 120 ms, 200 of them in the window: each answered and recorded.
        assert_eq!(o.answered, 200);
        assert_eq!(o.unanswered, 0);
        assert_eq!(o.latency.len(), 200);
        assert!((o.offered_rps - 2_000.0).abs() < 1e-6);
        assert_eq!(marks, [Mark::Opens, Mark::Closes]);
    }

    #[test]
    fn closed_loop_records_what_it_answered_and_marks_the_window() {
        let addr = http_server();
        let mut marks = Vec::new();
        let o = run(&config(addr, Pacing::Closed), &mut |m| marks.push(m)).unwrap();
        assert!(o.answered > 0);
        assert_eq!(o.latency.len(), o.answered);
        assert_eq!(marks, [Mark::Opens, Mark::Closes]);
    }

    #[test]
    fn only_loopback_is_loaded() {
        let cfg = config(([192, 0, 2, 1], 80).into(), Pacing::Closed);
        let e = run(&cfg, &mut |_| {}).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
