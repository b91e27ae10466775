//! `serve_per_core`: connections spread over the cores' listeners and stay on the core that
//! accepted them; resets and half-closes are ordinary results; a graceful shutdown drains, then
//! aborts, then refuses.

use std::cell::Cell;
use std::future::{poll_fn, Future};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::AsRawFd;
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::{serve_per_core, Serve, TcpStream};
use tickless::time::sleep;
use tickless::{Builder, Runtime};

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn two_cores() -> io::Result<Runtime> {
    Builder::new().cores(2).build()
}

/// Waits (on the runtime, polling its counters) until `done` holds; at most 10 s of real time,
/// so a bug fails the test instead of hanging it.
async fn until(mut done: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if done() {
            return;
        }
        sleep(Duration::from_millis(1)).await;
    }
    panic!("condition never reached");
}

/// Makes `close(2)` send a reset instead of a FIN (`SO_LINGER` with a zero timeout).
fn set_linger_zero(stream: &std::net::TcpStream) -> io::Result<()> {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `linger` is a valid, initialised `struct linger` for reads of the size passed, and
    // the descriptor is open for the duration of the call (borrowed from `stream`).
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::from_ref(&linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[test]
fn connections_are_spread_over_cores_and_served_where_accepted() -> io::Result<()> {
    let rt = two_cores()?;
    let server = serve_per_core(&rt, localhost(), |mut stream, conn| async move {
        // The task runs on the core that accepted the connection.
        let here = tickless::core_id() as u8;
        let _ = stream.write_all(&[here, conn.core() as u8]).await;
    })?;
    let addr = server.local_addr();
    let mut seen = [0usize; 2];
    let clients = std::thread::spawn(move || -> io::Result<[usize; 2]> {
        for _ in 0..64 {
            let mut c = std::net::TcpStream::connect(addr)?;
            let mut reply = [0u8; 2];
            c.read_exact(&mut reply)?;
            assert_eq!(reply[0], reply[1], "a connection ran away from its core");
            seen[reply[0] as usize] += 1;
        }
        Ok(seen)
    });
    let report = rt.block_on(async {
        until(|| clients.is_finished()).await;
        server.shutdown(Duration::from_secs(10)).await
    })?;
    let seen = clients.join().expect("client thread")?;
    // 64 connections from random ports: all on one core has probability 2^-63.
    assert!(seen[0] > 0 && seen[1] > 0, "SO_REUSEPORT spread: {seen:?}");
    assert_eq!(report.aborted, 0);
    Ok(())
}

#[test]
fn a_reset_is_an_ordinary_error_and_the_loop_keeps_accepting() -> io::Result<()> {
    let rt = two_cores()?;
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let o = outcomes.clone();
    let server = serve_per_core(&rt, localhost(), move |mut stream, _conn| {
        let o = o.clone();
        async move {
            let mut buf = [0u8; 64];
            let read = loop {
                match stream.read(&mut buf).await {
                    Ok(0) => break Ok(0),
                    Ok(_) => continue,
                    Err(e) => break Err(e.kind()),
                }
            };
            // Writing to a reset connection: an error, never SIGPIPE.
            let mut write = Ok(());
            for _ in 0..4 {
                if let Err(e) = stream.write_all(&[0u8; 4096]).await {
                    write = Err(e.kind());
                    break;
                }
            }
            o.lock().unwrap().push((read, write));
        }
    })?;
    let addr = server.local_addr();
    let clients = std::thread::spawn(move || -> io::Result<()> {
        for _ in 0..8 {
            let mut c = std::net::TcpStream::connect(addr)?;
            c.write_all(b"some bytes, then a reset")?;
            set_linger_zero(&c)?;
            drop(c); // RST
        }
        Ok(())
    });
    let o = outcomes.clone();
    let report = rt.block_on(async {
        until(|| o.lock().unwrap().len() == 8).await;
        server.shutdown(Duration::from_secs(10)).await
    })?;
    clients.join().expect("client thread")?;
    for (read, write) in outcomes.lock().unwrap().iter() {
        // The reset either reaches the read (`ConnectionReset`) or, if the data and the reset
        // were read as one, shows as end of file; the writes then fail.
        assert!(
            matches!(read, Ok(0) | Err(io::ErrorKind::ConnectionReset)),
            "read: {read:?}"
        );
        assert!(
            matches!(
                write,
                Err(io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe)
            ),
            "write: {write:?}"
        );
    }
    // Every reset connection was handled to its end, and none was left to abort.
    assert_eq!(outcomes.lock().unwrap().len(), 8);
    assert_eq!(report.aborted, 0);
    Ok(())
}

#[test]
fn a_half_close_still_gets_its_answer() -> io::Result<()> {
    let rt = two_cores()?;
    let server = serve_per_core(&rt, localhost(), |mut stream, _conn| async move {
        // Read everything the client sends, then answer with how much it was.
        let mut all = Vec::new();
        if stream.read_to_end(&mut all).await.is_ok() {
            let _ = stream.write_all(format!("{}", all.len()).as_bytes()).await;
            let _ = stream.close().await;
        }
    })?;
    let addr = server.local_addr();
    let clients = std::thread::spawn(move || -> io::Result<Vec<String>> {
        let mut answers = Vec::new();
        for n in [0usize, 1, 1000, 100_000] {
            let mut c = std::net::TcpStream::connect(addr)?;
            c.write_all(&vec![7u8; n])?;
            c.shutdown(Shutdown::Write)?;
            let mut answer = String::new();
            c.read_to_string(&mut answer)?;
            answers.push(answer);
        }
        Ok(answers)
    });
    rt.block_on(async {
        until(|| clients.is_finished()).await;
        server.shutdown(Duration::from_secs(10)).await
    })?;
    assert_eq!(
        clients.join().expect("client thread")?,
        ["0", "1", "1000", "100000"]
    );
    Ok(())
}

#[test]
fn shutdown_tells_handlers_drains_then_aborts_then_refuses() -> io::Result<()> {
    let rt = two_cores()?;
    let finished = Arc::new(AtomicUsize::new(0));
    let f = finished.clone();
    let server = Serve::new(localhost()).start(&rt, move |mut stream, conn| {
        let f = f.clone();
        async move {
            let mut kind = [0u8; 1];
            if stream.read_exact(&mut kind).await.is_err() {
                return;
            }
            if kind[0] == b'p' {
                // Polite: finishes as soon as the server says it stops.
                conn.shutdown_requested().await;
                assert!(conn.is_shutting_down());
                let _ = stream.write_all(b"bye").await;
                f.fetch_add(1, Ordering::SeqCst);
            } else {
                // Stubborn: never finishes by itself.
                std::future::pending::<()>().await;
            }
        }
    })?;
    let addr = server.local_addr();
    let report = rt.block_on(async {
        let mut polite = TcpStream::connect(addr).await?;
        let mut stubborn = TcpStream::connect(addr).await?;
        polite.write_all(b"p").await?;
        stubborn.write_all(b"s").await?;
        until(|| server.stats().total.open == 2).await;
        let report = server.shutdown(Duration::from_millis(50)).await?;
        let mut bye = Vec::new();
        polite.read_to_end(&mut bye).await?;
        assert_eq!(bye, b"bye");
        // The stubborn connection was aborted: its socket is closed.
        let mut rest = Vec::new();
        let _closed_or_reset = stubborn.read_to_end(&mut rest).await;
        assert!(rest.is_empty());
        // Every listener is closed.
        let refused = TcpStream::connect(addr).await;
        assert_eq!(
            refused.err().map(|e| e.kind()),
            Some(io::ErrorKind::ConnectionRefused)
        );
        io::Result::Ok(report)
    })?;
    assert_eq!(finished.load(Ordering::SeqCst), 1);
    assert_eq!((report.drained, report.aborted), (1, 1));
    Ok(())
}

#[test]
fn handlers_may_hold_non_send_state_and_the_server_counts_connections() -> io::Result<()> {
    let rt = two_cores()?;
    let server = serve_per_core(&rt, localhost(), |mut stream, _conn| async move {
        let local = Rc::new(Cell::new(0u8)); // `!Send`, held across awaits
        let mut b = [0u8; 1];
        while stream.read_exact(&mut b).await.is_ok() {
            local.set(local.get().wrapping_add(b[0]));
            sleep(Duration::from_micros(10)).await;
        }
        let _ = stream.write_all(&[local.get()]).await;
    })?;
    let addr = server.local_addr();
    let stats = rt.block_on(async {
        for i in 0..10u8 {
            let mut c = TcpStream::connect(addr).await?;
            c.write_all(&[i, i]).await?;
            c.close().await?;
            let mut sum = [0u8; 1];
            c.read_exact(&mut sum).await?;
            assert_eq!(sum[0], i.wrapping_mul(2));
        }
        until(|| server.stats().total.open == 0).await;
        io::Result::Ok(server.stats())
    })?;
    assert_eq!(stats.total.accepted, 10);
    assert_eq!(stats.cores.len(), 2);
    assert_eq!(stats.total.accept_errors, 0);
    assert_eq!(stats.total.error_reports, 0);
    Ok(())
}

#[test]
fn binding_a_port_in_use_fails_at_once() -> io::Result<()> {
    let rt = two_cores()?;
    let taken = std::net::TcpListener::bind(localhost())?; // no SO_REUSEPORT
    let err = serve_per_core(&rt, taken.local_addr()?, |_s, _c| async {}).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
    Ok(())
}

#[test]
fn a_shutdown_request_reaches_a_loop_sleeping_in_accept() -> io::Result<()> {
    // Nothing ever connects: both loops sleep in `accept` on their cores; the request must
    // wake them (core 1 from core 0's thread).
    let rt = two_cores()?;
    let server = serve_per_core(&rt, localhost(), |_s, _c| async {})?;
    let report = rt.block_on(async {
        let mut stop = pin!(server.shutdown(Duration::ZERO));
        // Poll it by hand once, as a select would, then to the end.
        let _first = poll_fn(|cx| Poll::Ready(stop.as_mut().poll(cx).is_ready())).await;
        stop.await
    })?;
    assert_eq!(report, tickless::net::ShutdownReport::default());
    Ok(())
}

#[test]
fn peek_leaves_the_bytes_for_the_next_read() -> io::Result<()> {
    let rt = two_cores()?;
    let server = serve_per_core(&rt, localhost(), |mut stream, _conn| async move {
        let mut first = [0u8; 3];
        let peeked = stream.peek(&mut first).await.expect("peek");
        let mut all = Vec::new();
        stream.read_to_end(&mut all).await.expect("read");
        // After end of file, a peek says 0 at once.
        let after = stream.peek(&mut first).await.expect("peek at eof");
        let _ = stream
            .write_all(format!("{peeked} {} {after}", all.len()).as_bytes())
            .await;
    })?;
    let addr = server.local_addr();
    let answer = rt.block_on(async {
        let mut c = TcpStream::connect(addr).await?;
        c.write_all(b"hello").await?;
        c.close().await?;
        let mut answer = String::new();
        c.read_to_string(&mut answer).await?;
        server.shutdown(Duration::from_secs(10)).await?;
        io::Result::Ok(answer)
    })?;
    // The peek saw up to 3 bytes; the read still got all 5.
    let parts: Vec<usize> = answer.split(' ').map(|p| p.parse().unwrap()).collect();
    assert!((1..=3).contains(&parts[0]), "{answer}");
    assert_eq!(&parts[1..], [5, 0]);
    Ok(())
}

#[test]
fn a_handler_that_panics_loses_its_connection_not_the_loop() -> io::Result<()> {
    let rt = two_cores()?;
    let made = Arc::new(AtomicUsize::new(0));
    let m = made.clone();
    let server = serve_per_core(&rt, localhost(), move |mut stream, _conn| {
        // The first two connections make the handler panic, before any future exists.
        assert!(
            m.fetch_add(1, Ordering::SeqCst) >= 2,
            "handler refuses (on purpose)"
        );
        async move {
            let _ = stream.write_all(b"ok").await;
        }
    })?;
    let addr = server.local_addr();
    let served = rt.block_on(async {
        let mut served = 0;
        for _ in 0..6 {
            let mut c = TcpStream::connect(addr).await?;
            let mut reply = Vec::new();
            let _closed_or_reset = c.read_to_end(&mut reply).await;
            served += usize::from(reply == b"ok");
        }
        server.shutdown(Duration::from_secs(10)).await?;
        io::Result::Ok(served)
    })?;
    assert_eq!(
        served, 4,
        "the two refused connections were closed, the rest served"
    );
    Ok(())
}

/// Serves `conns` connections from this thread (a round trip each, one at a time, each from a
/// new port), and says which core served each.
fn call_each(addr: SocketAddr, conns: usize) -> io::Result<[usize; 2]> {
    let mut seen = [0usize; 2];
    for _ in 0..conns {
        let mut c = std::net::TcpStream::connect(addr)?;
        c.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut reply = [0u8; 1];
        c.read_exact(&mut reply)?;
        seen[reply[0] as usize] += 1;
    }
    Ok(seen)
}

/// A server started from `main`, called from `main` with no thread in `block_on`: core 0 runs
/// nothing, and core 1 serves core 0's listener meanwhile, so every connection is answered
/// (before: the about half the kernel gave core 0's listener waited for a `block_on`). Then,
/// with a thread in `block_on`, core 0 serves its own again.
#[test]
fn core_zero_s_listener_is_served_by_core_1_while_no_thread_is_in_block_on() -> io::Result<()> {
    const CONNS: usize = 100;
    let rt = two_cores()?;
    let server = serve_per_core(&rt, localhost(), |mut stream, _conn| async move {
        let _ = stream.write_all(&[tickless::core_id() as u8]).await;
    })?;
    let addr = server.local_addr();
    let seen = call_each(addr, CONNS)?;
    assert_eq!(seen, [0, CONNS], "every connection answered, by core 1");
    let stats = server.stats();
    assert_eq!(stats.cores[0].accepted, 0);
    assert!(
        stats.cores[1].adopted > 0 && stats.cores[1].adopted < CONNS as u64,
        "core 1 took about half from core 0's listener: {:?}",
        stats.cores[1]
    );
    // Inside `block_on`, both cores serve their own listeners.
    let seen = rt.block_on(async {
        let caller = std::thread::spawn(move || call_each(addr, CONNS));
        until(|| caller.is_finished()).await;
        caller.join().expect("the caller")
    })?;
    assert_eq!(seen.iter().sum::<usize>(), CONNS);
    // 100 connections from random ports: none on core 0 has probability 2^-100.
    assert!(
        seen[0] > 0,
        "core 0 serves its listener in block_on: {seen:?}"
    );
    // And after it, core 1 again.
    assert_eq!(call_each(addr, 10)?, [0, 10]);
    let report = rt.block_on(server.shutdown(Duration::from_secs(10)))?;
    assert_eq!(report.aborted, 0);
    Ok(())
}

/// Two servers on one runtime, called with no thread in `block_on`: core 1's loop of each
/// serves core 0's listener of its server, so every connection to either is answered. (Core 0
/// kept one waker for the loops that adopt its listener, the last registered, so the first
/// server's loop was never told core 0 was left: its core 0 connections waited until one came
/// to its core 1 listener. `serve_watch`'s unit test checks every watcher is woken.)
#[test]
fn core_1_serves_core_0_s_listener_of_every_server_while_no_thread_is_in_block_on() -> io::Result<()>
{
    const CONNS: usize = 40;
    let rt = two_cores()?;
    let answer = |mut stream: TcpStream, _conn| async move {
        let _ = stream.write_all(&[tickless::core_id() as u8]).await;
    };
    let (a, b) = (
        serve_per_core(&rt, localhost(), answer)?,
        serve_per_core(&rt, localhost(), answer)?,
    );
    // Both loops of core 1 start (and look at core 0) inside a `block_on`; then it returns.
    rt.block_on(async {
        until(|| a.stats().cores[1].accepted + b.stats().cores[1].accepted == 0).await;
        for _ in 0..10 {
            tickless::task::yield_now().await;
        }
    });
    for server in [&a, &b] {
        assert_eq!(call_each(server.local_addr(), CONNS)?, [0, CONNS]);
    }
    for server in [a, b] {
        let report = rt.block_on(server.shutdown(Duration::from_secs(10)))?;
        assert_eq!(report.aborted, 0);
    }
    Ok(())
}

/// A core that stepped back from crowded CPUs (`Builder::yield_when_crowded`; here on cue)
/// accepts nothing on its own listener: core 0 takes its connections (counted as `adopted`),
/// so none is served by a thread that waits for a CPU; once it serves again, it takes its
/// own again. Without the hand-over, about half of the connections would go to core 1.
#[test]
fn core_0_serves_the_listener_of_a_core_that_stepped_back() -> io::Result<()> {
    const CONNS: usize = 100;
    let rt = two_cores()?;
    let server = serve_per_core(&rt, localhost(), |mut stream, _conn| async move {
        let _ = stream.write_all(&[tickless::core_id() as u8]).await;
    })?;
    let addr = server.local_addr();
    let in_block_on = |conns| {
        rt.block_on(async {
            let caller = std::thread::spawn(move || call_each(addr, conns));
            until(|| caller.is_finished()).await;
            caller.join().expect("the caller")
        })
    };
    tickless::__private::step_back(&rt.handle(1), true);
    assert_eq!(
        in_block_on(CONNS)?,
        [CONNS, 0],
        "every connection served by core 0"
    );
    let stats = server.stats();
    assert_eq!(stats.cores[1].accepted, 0, "{stats:?}");
    // 100 connections from random ports: none on core 1's listener has probability 2^-100.
    assert!(
        stats.cores[0].adopted > 0 && stats.cores[0].adopted < CONNS as u64,
        "core 0 took about half from core 1's listener: {:?}",
        stats.cores[0]
    );
    tickless::__private::step_back(&rt.handle(1), false);
    let seen = in_block_on(CONNS)?;
    assert!(
        seen[1] > 0,
        "core 1 serves its own listener again: {seen:?}"
    );
    let report = rt.block_on(server.shutdown(Duration::from_secs(10)))?;
    assert_eq!(report.aborted, 0);
    Ok(())
}
