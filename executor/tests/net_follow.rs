//! I/O follows the task that polls it: a stream the accept loop used (a greeting, a peek)
//! before spawning its connection's task, the two halves of a split stream in two tasks, and a
//! stream handed through a channel to a task on the other core are all served where they are
//! polled: every byte echoed, no task panics, and the moves counted by the cores that now serve
//! them (`io_rebinds`). Counted, never timed: every wait is bounded by counts, with a generous
//! hang guard only.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::{OwnedReadHalf, OwnedWriteHalf, TcpListener, TcpStream};
use tickless::runtime::Builder;
use tickless::{Runtime, Stats};

/// Connections per test.
const CONNECTIONS: usize = 100;

/// The hang guard of every wait on another core's counters: a test that needs it failed.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// Two cores that move tasks by placement only (no stealing): these tests count the moves that
/// placement and the I/O rule make, exactly (`rt_steal.rs` counts the ones stealing adds).
fn placing_only() -> io::Result<Runtime> {
    Builder::new()
        .cores(2)
        .steal_after(None)
        .harvest_after(None)
        .build()
}

/// A channel between tasks on any cores: a queue, the receiver's waker, and whether the sender
/// is gone.
struct Chan<T>(Mutex<(VecDeque<T>, Option<Waker>, bool)>);

impl<T> Chan<T> {
    /// An empty, open channel.
    fn new() -> Arc<Chan<T>> {
        Arc::new(Chan(Mutex::new((VecDeque::new(), None, false))))
    }

    /// Queues `value` and wakes the receiver.
    fn send(&self, value: T) {
        let waker = {
            let mut c = self.0.lock().unwrap();
            c.0.push_back(value);
            c.1.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// No more values: the receiver gets `None` once the queue is empty.
    fn close(&self) {
        let waker = {
            let mut c = self.0.lock().unwrap();
            c.2 = true;
            c.1.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The next value, or `None` once closed and drained.
    async fn recv(&self) -> Option<T> {
        poll_fn(|cx| {
            let mut c = self.0.lock().unwrap();
            if let Some(v) = c.0.pop_front() {
                return Poll::Ready(Some(v));
            }
            if c.2 {
                return Poll::Ready(None);
            }
            c.1 = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

/// Echoes until end of file.
async fn echo(mut stream: TcpStream) -> io::Result<()> {
    let mut buf = [0u8; 256];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        stream.write_all(&buf[..n]).await?;
    }
}

/// The message connection `i` sends: long enough for several reads, different per connection.
fn message(i: usize) -> Vec<u8> {
    (0..1000).map(|j| (i * 7 + j) as u8).collect()
}

/// Opens `n` connections, all kept open, sending each one's message as soon as it is open (so
/// that the server's peek finds it); then on each reads a greeting line if `greeting` and the
/// message back whole; then closes them all.
fn clients(addr: SocketAddr, n: usize, greeting: bool) -> io::Result<()> {
    let mut conns = Vec::new();
    for i in 0..n {
        let mut c = std::net::TcpStream::connect(addr)?;
        c.write_all(&message(i))?;
        conns.push(BufReader::new(c));
    }
    for (i, c) in conns.iter_mut().enumerate() {
        if greeting {
            let mut line = String::new();
            c.read_line(&mut line)?;
            assert_eq!(line, "hello\n");
        }
        let sent = message(i);
        let mut back = vec![0u8; sent.len()];
        c.read_exact(&mut back)?;
        assert_eq!(back, sent, "connection {i}: every byte echoed");
    }
    for c in &mut conns {
        c.get_mut().shutdown(std::net::Shutdown::Write)?;
        let mut rest = Vec::new();
        c.read_to_end(&mut rest)?;
        assert!(rest.is_empty());
    }
    Ok(())
}

/// The runtime's stats once `done` says they are complete (the other core publishes its
/// counters when it idles), or whatever they are at the hang guard.
fn stats_when(rt: &Runtime, done: impl Fn(&Stats) -> bool) -> Stats {
    let start = Instant::now();
    loop {
        let stats = rt.stats();
        if done(&stats) || start.elapsed() > HANG_GUARD {
            return stats;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A tokio-shaped server on two cores: the accept loop (core 0, in `block_on`) calls `before`
/// on each accepted stream, then spawns `echo` for it, placement choosing the core. Returns the
/// runtime's stats once every task has ended and core 1's counters show its moves.
fn serve(greeting: bool, peek: bool) -> io::Result<Stats> {
    let rt = placing_only()?;
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = std_listener.local_addr()?;
    let client = std::thread::spawn(move || clients(addr, CONNECTIONS, greeting));
    rt.block_on(async {
        let listener = TcpListener::from_std(std_listener)?;
        let mut tasks = Vec::new();
        for _ in 0..CONNECTIONS {
            let (mut stream, _) = listener.accept().await?;
            if greeting {
                stream.write_all(b"hello\n").await?;
            }
            if peek {
                let mut first = [0u8; 1];
                assert_eq!(stream.peek(&mut first).await?, 1);
            }
            tasks.push(tickless::spawn(echo(stream)));
        }
        for t in tasks {
            t.await.expect("a connection task panicked")?;
        }
        io::Result::Ok(())
    })?;
    client.join().expect("the client thread panicked")?;
    let placed = rt.stats().cores[0].tasks_placed;
    Ok(stats_when(&rt, |s| s.cores[1].io_rebinds >= placed))
}

/// What every test that serves through `serve` checks: no panic, every connection placed on
/// core 1 moved there once (its read and write together), none moved to core 0.
fn check_moves(stats: &Stats) {
    assert_eq!(stats.total.task_panics, 0);
    let placed = stats.cores[0].tasks_placed;
    assert!(placed > 0, "placement sent some connections to core 1");
    assert_eq!(
        stats.cores[1].io_rebinds, placed,
        "each stream placed on core 1 moved there once"
    );
    assert_eq!(stats.cores[0].io_rebinds, 0, "nothing moved to core 0");
}

#[test]
fn a_stream_greeted_before_its_task_is_spawned_moves_to_the_tasks_core() -> io::Result<()> {
    check_moves(&serve(true, false)?);
    Ok(())
}

#[test]
fn a_stream_peeked_before_its_task_is_spawned_moves_to_the_tasks_core() -> io::Result<()> {
    check_moves(&serve(false, true)?);
    Ok(())
}

/// The read half: forwards what it reads to the writer, and closes the channel at end of
/// file. Returns its core.
async fn reader(mut r: OwnedReadHalf, to_writer: Arc<Chan<Vec<u8>>>) -> io::Result<usize> {
    let mut buf = [0u8; 256];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            to_writer.close();
            return Ok(tickless::core_id());
        }
        to_writer.send(buf[..n].to_vec());
    }
}

/// The write half: writes back what the reader forwards, until the channel closes. Returns
/// its core.
async fn writer(mut w: OwnedWriteHalf, from_reader: Arc<Chan<Vec<u8>>>) -> io::Result<usize> {
    let core = tickless::core_id();
    while let Some(bytes) = from_reader.recv().await {
        w.write_all(&bytes).await?;
    }
    w.close().await?;
    Ok(core)
}

#[test]
fn split_halves_in_two_tasks_on_two_cores_both_progress() -> io::Result<()> {
    let rt = placing_only()?;
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = std_listener.local_addr()?;
    let client = std::thread::spawn(move || clients(addr, CONNECTIONS, false));
    let apart = Arc::new(AtomicUsize::new(0));
    let counted = apart.clone();
    rt.block_on(async move {
        let listener = TcpListener::from_std(std_listener)?;
        let mut pairs = Vec::new();
        for _ in 0..CONNECTIONS {
            let (stream, _) = listener.accept().await?;
            let (r, w) = stream.into_split();
            let chan = Chan::new();
            // Right after the accept: the first spawn may be placed on the other core.
            let read = tickless::spawn(reader(r, chan.clone()));
            let write = tickless::spawn(writer(w, chan));
            pairs.push((read, write));
        }
        for (read, write) in pairs {
            let r = read.await.expect("a reader panicked")?;
            let w = write.await.expect("a writer panicked")?;
            if r != w {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        }
        io::Result::Ok(())
    })?;
    client.join().expect("the client thread panicked")?;
    let apart = apart.load(Ordering::SeqCst) as u64;
    assert!(apart > 0, "some connections had their halves on two cores");
    // The reader's first read bound the stream to its core; the writer's first write moved the
    // write direction alone to its own core (a split stream's halves never drag each other).
    let stats = stats_when(&rt, |s| s.total.io_rebinds >= apart);
    assert_eq!(stats.total.task_panics, 0);
    assert_eq!(
        stats.total.io_rebinds, apart,
        "one move per stream whose halves ran on two cores"
    );
    Ok(())
}

#[test]
fn a_stream_sent_through_a_channel_to_the_other_core_is_served_there() -> io::Result<()> {
    let rt = Builder::new().cores(2).harvest_after(None).build()?;
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = std_listener.local_addr()?;
    let client = std::thread::spawn(move || clients(addr, 1, true));
    let chan: Arc<Chan<TcpStream>> = Chan::new();
    let rx = chan.clone();
    // Waiting on core 1 before the stream exists.
    let server = rt.handle(1).spawn(async move {
        let stream = rx.recv().await.expect("a stream");
        echo(stream).await?;
        io::Result::Ok(tickless::core_id())
    });
    let core = rt.block_on(async move {
        let listener = TcpListener::from_std(std_listener)?;
        let (mut stream, _) = listener.accept().await?;
        stream.write_all(b"hello\n").await?;
        chan.send(stream);
        server.await.expect("the server task panicked")
    })?;
    assert_eq!(core, 1);
    client.join().expect("the client thread panicked")?;
    let stats = stats_when(&rt, |s| s.cores[1].io_rebinds >= 1);
    assert_eq!(stats.total.task_panics, 0);
    assert_eq!(
        (stats.cores[0].io_rebinds, stats.cores[1].io_rebinds),
        (0, 1)
    );
    Ok(())
}

#[test]
fn a_ping_pong_on_one_core_never_moves() -> io::Result<()> {
    // The benchmarks' ping-pong (`pingpong_same`, `pingpong_timeout`): two tasks of one core
    // trading a byte over two pipes, each read under a timeout. Nothing moves.
    let rt = Builder::new().cores(2).build()?;
    let rounds = rt.block_on(async {
        let (mut to_echo, mut echo_in) = tickless::io::pipe()?;
        let (mut echo_out, mut back) = tickless::io::pipe()?;
        let echo = tickless::spawn(async move {
            let mut b = [0u8; 1];
            while echo_in.read(&mut b).await? == 1 {
                echo_out.write_all(&b).await?;
            }
            io::Result::Ok(())
        });
        let mut b = [0u8; 1];
        for _ in 0..1_000 {
            to_echo.write_all(b"x").await?;
            tickless::time::timeout(Duration::from_secs(60), back.read_exact(&mut b))
                .await
                .expect("the echo came back")?;
        }
        drop(to_echo);
        echo.await.expect("the echo task panicked")?;
        io::Result::Ok(1_000)
    })?;
    assert_eq!(rounds, 1_000);
    let stats = rt.stats();
    assert_eq!(stats.total.io_rebinds, 0);
    assert_eq!(
        (stats.total.steals, stats.total.tasks_spilled),
        (0, 0),
        "nothing spills"
    );
    assert_eq!(stats.total.task_panics, 0);
    Ok(())
}
