//! Placement of new tasks: a server written the tokio way (one listener, one accept loop,
//! `spawn` per connection) spreads its connections over the cores; every other spawn stays on
//! its core; an accepted stream is driven by the core that first polls it. Counted per core
//! (connections, placed spawns, registrations), never timed.

use std::io::{self, BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::{TcpListener, TcpStream};
use tickless::runtime::{Builder, Placement};
use tickless::Runtime;

/// A runtime of `cores` cores that places tasks and then leaves them where they are: no
/// stealing, no harvest, no step back from crowded CPUs. These tests locate tasks by core; on a
/// loaded machine (CI's, two vCPUs shared with the build) those movers may legitimately take a
/// task whose core's thread waits for a CPU, which `rt_books` and `rt_harvest` test.
fn placing_only(cores: usize) -> io::Result<Runtime> {
    Builder::new()
        .cores(cores)
        .steal_after(None)
        .harvest_after(None)
        .yield_when_crowded(false)
        .build()
}

/// Connections in the spread test.
const CONNECTIONS: usize = 100;

/// The tokio-shaped server: one accept loop (in `block_on`, on core 0) that spawns a task per
/// connection; each answers with the index of its core and echoes until the client closes.
/// Returns how many connections each core served.
fn serve_tokio_shape(rt: &Runtime, connections: usize) -> io::Result<Vec<usize>> {
    let per_core: Arc<Vec<AtomicUsize>> =
        Arc::new((0..rt.cores()).map(|_| AtomicUsize::new(0)).collect());
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = std_listener.local_addr()?;
    let client = std::thread::spawn(move || clients(addr, connections));
    let counts = per_core.clone();
    rt.block_on(async move {
        let listener = TcpListener::from_std(std_listener)?;
        let mut served = Vec::new();
        for _ in 0..connections {
            let (stream, _) = listener.accept().await?;
            let counts = counts.clone();
            served.push(tickless::spawn(async move {
                counts[tickless::core_id()].fetch_add(1, Ordering::SeqCst);
                serve(stream).await
            }));
        }
        for s in served {
            s.await.expect("a connection task failed")?;
        }
        io::Result::Ok(())
    })?;
    client.join().expect("the client thread panicked")?;
    Ok(per_core.iter().map(|c| c.load(Ordering::SeqCst)).collect())
}

/// One connection: says which core serves it, then echoes lines until end of file.
async fn serve(mut stream: TcpStream) -> io::Result<()> {
    let core = tickless::core_id();
    stream.write_all(format!("{core}\n").as_bytes()).await?;
    let mut buf = [0u8; 64];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        stream.write_all(&buf[..n]).await?;
    }
}

/// Opens `n` connections and keeps them all open (so every connection task is alive at once),
/// reads each one's core, makes one echo round trip on each, then closes them.
fn clients(addr: SocketAddr, n: usize) -> io::Result<()> {
    let mut conns = Vec::new();
    for _ in 0..n {
        conns.push(BufReader::new(std::net::TcpStream::connect(addr)?));
    }
    for c in &mut conns {
        let mut line = String::new();
        c.read_line(&mut line)?;
        line.trim().parse::<usize>().expect("a core index");
        c.get_mut().write_all(b"ping\n")?;
        line.clear();
        c.read_line(&mut line)?;
        assert_eq!(line, "ping\n");
    }
    Ok(())
}

#[test]
fn one_accept_loop_spreads_its_connections_over_the_cores() -> io::Result<()> {
    // Placement alone (stealing, which moves more, is counted in `rt_steal.rs`).
    let rt = Builder::new()
        .cores(2)
        .steal_after(None)
        .harvest_after(None)
        .build()?;
    let per_core = serve_tokio_shape(&rt, CONNECTIONS)?;
    assert_eq!(per_core.iter().sum::<usize>(), CONNECTIONS);
    for (core, &n) in per_core.iter().enumerate() {
        assert!(
            n * 100 >= CONNECTIONS * 30,
            "core {core} served {n} of {CONNECTIONS} connections: {per_core:?}"
        );
    }
    let stats = rt.stats();
    assert_eq!(stats.cores[0].accepts, CONNECTIONS as u64);
    assert_eq!(stats.cores[0].tasks_placed, per_core[1] as u64);
    Ok(())
}

#[test]
fn with_local_placement_every_connection_stays_on_the_accepting_core() -> io::Result<()> {
    let rt = Builder::new()
        .cores(2)
        .placement(Placement::Local)
        .steal_after(None)
        .harvest_after(None)
        .build()?;
    let per_core = serve_tokio_shape(&rt, 20)?;
    assert_eq!(per_core, vec![20, 0]);
    assert_eq!(rt.stats().cores[0].tasks_placed, 0);
    Ok(())
}

#[test]
fn an_accepted_stream_registers_with_the_core_that_first_polls_it() -> io::Result<()> {
    let rt = placing_only(2)?;
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = std_listener.local_addr()?;
    let client = std::thread::spawn(move || -> io::Result<String> {
        let mut c = BufReader::new(std::net::TcpStream::connect(addr)?);
        let mut line = String::new();
        c.read_line(&mut line)?;
        Ok(line)
    });
    let before = rt.stats();
    let served_on = rt.block_on(async {
        let listener = TcpListener::from_std(std_listener)?;
        let (stream, _) = listener.accept().await?;
        // Accepted on core 0, handed to core 1 before anyone polled it.
        let task = rt.handle(1).spawn(async move {
            let mut stream = stream;
            stream.write_all(b"hello\n").await?;
            // Still open: core 1's reactor holds it now.
            let registered_here = tickless::runtime::Handle::current().core();
            io::Result::Ok((registered_here, stream))
        });
        let (core, stream) = task.await.expect("the task ran")?;
        io::Result::Ok((core, stream))
    })?;
    let (core, stream) = served_on;
    assert_eq!(core, 1);
    assert_eq!(client.join().unwrap()?, "hello\n");
    // Core 1 publishes its counters when it idles; wait for the gauge to show the stream.
    let mut stats = rt.stats();
    for _ in 0..10_000 {
        if stats.cores[1].io_registrations > before.cores[1].io_registrations {
            break;
        }
        std::thread::yield_now();
        stats = rt.stats();
    }
    assert_eq!(
        stats.cores[1].io_registrations - before.cores[1].io_registrations,
        1,
        "the stream registered with core 1"
    );
    assert_eq!(stats.cores[0].accepts, 1);
    assert_eq!(
        stats.cores[0].io_registrations, before.cores[0].io_registrations,
        "core 0 held the listener only, and dropped it"
    );
    drop(stream);
    Ok(())
}

#[test]
fn a_spawn_that_follows_no_accept_stays_on_its_core_however_loaded() -> io::Result<()> {
    let rt = placing_only(2)?;
    // Core 1 carries many live tasks, core 0 none: a plain spawn on core 1 still stays there.
    let cores = rt
        .handle(1)
        .spawn(async {
            let parked: Vec<_> = (0..50)
                .map(|_| tickless::spawn(std::future::pending::<()>()))
                .collect();
            let helper = tickless::spawn(async { tickless::core_id() })
                .await
                .unwrap();
            for p in &parked {
                p.abort();
            }
            (tickless::core_id(), helper)
        })
        .join()
        .unwrap();
    assert_eq!(cores, (1, 1));
    assert_eq!(rt.stats().cores[1].tasks_placed, 0);
    Ok(())
}

#[test]
fn a_connection_that_spawns_a_writer_keeps_it_on_its_core() -> io::Result<()> {
    let rt = placing_only(2)?;
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = std_listener.local_addr()?;
    let client = std::thread::spawn(move || -> io::Result<Vec<String>> {
        let mut conns = Vec::new();
        for _ in 0..4 {
            conns.push(BufReader::new(std::net::TcpStream::connect(addr)?));
        }
        let mut lines = Vec::new();
        for c in &mut conns {
            let mut line = String::new();
            c.read_line(&mut line)?;
            lines.push(line);
        }
        Ok(lines)
    });
    rt.block_on(async {
        let listener = TcpListener::from_std(std_listener)?;
        let mut conns = Vec::new();
        for _ in 0..4 {
            let (stream, _) = listener.accept().await?;
            conns.push(tickless::spawn(async move {
                // The connection polls its stream first, then hands the write half to a
                // writer task: that spawn follows no accept, so it stays on this core,
                // where the stream is registered (elsewhere, the write would panic).
                let (mut read, write) = stream.into_split();
                let mut nothing = [0u8; 0];
                read.read(&mut nothing).await?;
                let me = tickless::core_id();
                let writer = tickless::spawn(async move {
                    let mut write = write;
                    let line = format!("{me} {}\n", tickless::core_id());
                    write.write_all(line.as_bytes()).await
                });
                writer.await.expect("the writer ran")
            }));
        }
        for c in conns {
            c.await.expect("a connection task")?;
        }
        io::Result::Ok(())
    })?;
    for line in client.join().unwrap()? {
        let mut it = line.split_whitespace();
        assert_eq!(
            it.next(),
            it.next(),
            "the writer ran on its connection's core: {line}"
        );
    }
    Ok(())
}

#[test]
fn a_spawn_in_a_later_poll_than_the_accept_stays_on_its_core() -> io::Result<()> {
    let rt = placing_only(2)?;
    let core = rt.block_on(async {
        // Core 0 is the more loaded: a spawn that followed an accept would go to core 1.
        let parked = tickless::task::spawn_local(std::future::pending::<()>());
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let _client = std::net::TcpStream::connect(listener.local_addr()?)?;
        let (_kept, _) = listener.accept().await?;
        // The accepting task keeps its stream and yields: the accept belongs to that poll.
        tickless::task::yield_now().await;
        let core = tickless::spawn(async { tickless::core_id() })
            .await
            .unwrap();
        parked.abort();
        io::Result::Ok(core)
    })?;
    assert_eq!(core, 0);
    assert_eq!(rt.stats().cores[0].tasks_placed, 0);
    assert_eq!(rt.stats().cores[0].accepts, 1);
    Ok(())
}

/// Accepts one connection (a client thread connects) and spawns its task in the same poll,
/// returning the core that ran it.
async fn accept_and_spawn(listener: &TcpListener) -> io::Result<usize> {
    let _client = std::net::TcpStream::connect(listener.local_addr()?)?;
    let (stream, _) = listener.accept().await?;
    let core = tickless::spawn(async move {
        drop(stream);
        tickless::core_id()
    });
    Ok(core.await.expect("the connection task"))
}

#[test]
fn a_spawn_after_an_accept_goes_to_the_less_loaded_core_and_a_tie_stays() -> io::Result<()> {
    let rt = placing_only(2)?;
    let cores = rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        // Both cores carry nothing: a tie, the task stays.
        let tie = accept_and_spawn(&listener).await?;
        // Core 0 carries a task, core 1 none: the next goes to core 1.
        let parked = tickless::task::spawn_local(std::future::pending::<()>());
        let less_loaded = accept_and_spawn(&listener).await?;
        parked.abort();
        io::Result::Ok((tie, less_loaded))
    })?;
    assert_eq!(cores, (0, 1));
    assert_eq!(rt.stats().cores[0].tasks_placed, 1);
    Ok(())
}

#[test]
fn on_one_core_a_spawn_after_an_accept_stays() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    let core = rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let _parked = tickless::task::spawn_local(std::future::pending::<()>());
        accept_and_spawn(&listener).await
    })?;
    assert_eq!(core, 0);
    Ok(())
}

#[test]
fn on_three_cores_the_accept_loop_takes_the_other_cores_in_turn() -> io::Result<()> {
    let rt = Builder::new().cores(3).build()?;
    // Every connection stays open until all are served, so the loads only grow: each core
    // gets about a third.
    let per_core = serve_tokio_shape(&rt, 30)?;
    for (core, &n) in per_core.iter().enumerate() {
        assert!(n >= 6, "core {core} served {n} of 30: {per_core:?}");
    }
    Ok(())
}

/// An accept loop on core 1 while no thread is in `block_on` (`main` waits in `join`): core 0
/// runs nothing then, so placement must not hand it a connection. Every connection is
/// answered, by core 1, and nothing is placed on core 0. (Before: about half the connections
/// were placed on the idle core 0, whose inbox nobody drained, and their clients hung.)
#[test]
fn no_connection_is_placed_on_core_0_while_no_thread_is_in_block_on() -> io::Result<()> {
    // No tokio context: with one, a thread of the runtime's runs core 0 meanwhile.
    let rt = Builder::new().cores(2).tokio_context(false).build()?;
    // A `block_on` that has returned leaves core 0 as idle as one never called.
    rt.block_on(async {});
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = std_listener.local_addr()?;
    let connections = 20;
    let accept_loop = rt.handle(1).spawn(async move {
        let listener = TcpListener::from_std(std_listener)?;
        let mut served = Vec::new();
        for _ in 0..connections {
            let (stream, _) = listener.accept().await?;
            served.push(tickless::spawn(serve(stream)));
        }
        for s in served {
            s.await.expect("a connection task failed")?;
        }
        io::Result::Ok(())
    });
    let mut cores = Vec::new();
    let mut conns = Vec::new();
    for _ in 0..connections {
        // One at a time: each is accepted before the next, so each spawn follows an accept.
        let mut c = BufReader::new(std::net::TcpStream::connect(addr)?);
        let mut line = String::new();
        c.read_line(&mut line)?;
        cores.push(line.trim().parse::<usize>().expect("a core index"));
        conns.push(c);
    }
    drop(conns);
    accept_loop.join().expect("the accept loop failed")?;
    assert!(cores.iter().all(|&c| c == 1), "served by {cores:?}");
    assert_eq!(rt.stats().cores[1].tasks_placed, 0);
    Ok(())
}

/// The same accept loop on core 1 while a thread is in `block_on`: core 0 runs then, and takes
/// its share of the connections (placement counts core 0 as running while it is driven).
#[test]
fn connections_are_placed_on_core_0_while_a_thread_is_in_block_on() -> io::Result<()> {
    let rt = placing_only(2)?;
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = std_listener.local_addr()?;
    let connections = 20;
    let accept_loop = rt.handle(1).spawn(async move {
        let listener = TcpListener::from_std(std_listener)?;
        let mut served = Vec::new();
        for _ in 0..connections {
            let (stream, _) = listener.accept().await?;
            served.push(tickless::spawn(serve(stream)));
        }
        for s in served {
            s.await.expect("a connection task failed")?;
        }
        io::Result::Ok(())
    });
    let client = std::thread::spawn(move || {
        let mut cores = Vec::new();
        let mut conns = Vec::new();
        for _ in 0..connections {
            let mut c = BufReader::new(std::net::TcpStream::connect(addr)?);
            let mut line = String::new();
            c.read_line(&mut line)?;
            cores.push(line.trim().parse::<usize>().expect("a core index"));
            conns.push(c);
        }
        io::Result::Ok(cores)
    });
    rt.block_on(accept_loop).expect("the accept loop failed")?;
    let cores = client.join().expect("the client panicked")?;
    assert!(cores.contains(&0), "served by {cores:?}");
    assert!(rt.stats().cores[1].tasks_placed > 0);
    Ok(())
}
