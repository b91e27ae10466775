//! Binding a server's listeners: a taken address is refused (`AddrInUse`, as tokio's
//! `TcpListener::bind`), whoever holds it, while the runtime's own per-core listeners share it;
//! a deliberate share (`Serve::reuse_port`) still binds.

use std::io::{self, BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::{Serve, TcpStream};
use tickless::{Builder, Runtime};

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn two_cores() -> io::Result<Runtime> {
    Builder::new().cores(2).build()
}

/// A second server on the address of a first, in the same process: refused. (Before, every
/// listener had `SO_REUSEPORT` from the start, so the second bound too and the kernel split
/// the connections between the two.)
#[test]
fn a_second_server_on_a_taken_address_in_this_process_gets_addr_in_use() -> io::Result<()> {
    let rt = two_cores()?;
    let first = Serve::new(localhost()).start(&rt, |_s, _c| async {})?;
    let second = Serve::new(first.local_addr()).start(&rt, |_s, _c| async {});
    assert_eq!(second.unwrap_err().kind(), io::ErrorKind::AddrInUse);
    // The first still serves on every core (port 0 gave both of its listeners one port).
    let report = rt.block_on(async {
        TcpStream::connect(first.local_addr()).await?;
        first.shutdown(Duration::from_secs(10)).await
    })?;
    assert_eq!(report.aborted, 0);
    Ok(())
}

/// The child's side of the next test: a tickless server on two cores, its address on stdout,
/// serving until its stdin closes. Does nothing unless started as that child.
#[test]
fn child_serving_until_stdin_closes() -> io::Result<()> {
    if std::env::var_os("TICKLESS_TEST_CHILD_SERVER").is_none() {
        return Ok(());
    }
    let rt = two_cores()?;
    let server = Serve::new(localhost()).start(&rt, |_s, _c| async {})?;
    println!("CHILD_ADDR={}", server.local_addr());
    // Returns at end of file: the parent is done.
    let _eof = io::stdin().read_to_end(&mut Vec::new());
    rt.block_on(server.shutdown(Duration::from_secs(5)))?;
    Ok(())
}

/// Another process serving the address (another copy of the server, its listeners with
/// `SO_REUSEPORT`): refused, not shared.
#[test]
fn a_server_of_another_process_on_the_address_gets_addr_in_use() -> io::Result<()> {
    // Its end of file, if it failed before saying where it serves, ends the search below.
    let mut child = Command::new(std::env::current_exe()?)
        .args(["--exact", "child_serving_until_stdin_closes", "--nocapture"])
        .args(["--test-threads", "1"])
        .env("TICKLESS_TEST_CHILD_SERVER", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let addr: SocketAddr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| {
            // The test harness's `test name ... ` may precede it on the line.
            let (_, addr) = line.split_once("CHILD_ADDR=")?;
            Some(addr.trim().parse().unwrap())
        })
        .expect("the child says where it serves");
    let rt = two_cores()?;
    let taken = Serve::new(addr).start(&rt, |_s, _c| async {});
    drop(child.stdin.take()); // the child stops
    lines.for_each(drop); // what it says until it ends (a closed pipe would fail its prints)
    let status = child.wait()?;
    assert_eq!(taken.unwrap_err().kind(), io::ErrorKind::AddrInUse);
    assert!(status.success(), "the child: {status}");
    Ok(())
}

/// A listener with `SO_REUSEPORT` of this process (what a server that shares on purpose
/// binds): refused as well, unless this server shares on purpose too.
#[test]
fn a_reuseport_listener_on_the_address_is_refused_unless_sharing_is_asked() -> io::Result<()> {
    let rt = two_cores()?;
    let other = tickless::net::TcpListener::bind_reuseport_std(localhost())?;
    let addr = other.local_addr()?;
    let refused = Serve::new(addr).start(&rt, |_s, _c| async {});
    assert_eq!(refused.unwrap_err().kind(), io::ErrorKind::AddrInUse);
    let shared = Serve::new(addr)
        .reuse_port(true)
        .start(&rt, |_s, _c| async {})?;
    assert_eq!(shared.local_addr(), addr);
    rt.block_on(shared.shutdown(Duration::from_secs(10)))?;
    Ok(())
}

/// Two servers that both ask to share: both bind, and both serve.
#[test]
fn two_servers_that_ask_to_share_both_serve() -> io::Result<()> {
    let rt = two_cores()?;
    let serve = |tag: u8, addr| {
        Serve::new(addr)
            .reuse_port(true)
            .start(&rt, move |mut stream, _conn| async move {
                let _ = stream.write_all(&[tag]).await;
            })
    };
    let a = serve(b'a', localhost())?;
    let b = serve(b'b', a.local_addr())?;
    let addr = a.local_addr();
    let mut seen = [0usize; 2];
    rt.block_on(async {
        // 64 connections from random ports: none on one server has probability 2^-63.
        for _ in 0..64 {
            let mut c = TcpStream::connect(addr).await?;
            let mut tag = [0u8; 1];
            c.read_exact(&mut tag).await?;
            seen[usize::from(tag[0] - b'a')] += 1;
        }
        a.shutdown(Duration::from_secs(10)).await?;
        b.shutdown(Duration::from_secs(10)).await
    })?;
    assert!(seen[0] > 0 && seen[1] > 0, "both served: {seen:?}");
    Ok(())
}

/// A fixed port (not 0) free at first: every core's listener binds it, and a second server
/// on it is refused.
#[test]
fn a_fixed_free_port_is_shared_by_the_cores_and_refused_to_a_second_server() -> io::Result<()> {
    let rt = two_cores()?;
    let port = std::net::TcpListener::bind(localhost())?.local_addr()?; // then free again
    let server = Serve::new(port).start(&rt, |mut stream, conn| async move {
        let _ = stream.write_all(&[conn.core() as u8]).await;
    })?;
    assert_eq!(server.local_addr(), port);
    let again = Serve::new(port).start(&rt, |_s, _c| async {});
    assert_eq!(again.unwrap_err().kind(), io::ErrorKind::AddrInUse);
    let mut seen = [0usize; 2];
    rt.block_on(async {
        for _ in 0..64 {
            let mut c = TcpStream::connect(port).await?;
            let mut core = [0u8; 1];
            c.read_exact(&mut core).await?;
            seen[usize::from(core[0])] += 1;
        }
        io::Result::Ok(())
    })?;
    // Both cores' listeners share the port: 64 connections all on one has probability 2^-63.
    assert!(
        seen[0] > 0 && seen[1] > 0,
        "spread over the cores: {seen:?}"
    );
    let stats = server.stats();
    assert!(stats.cores.iter().all(|c| c.accepted > 0), "{stats:?}");
    rt.block_on(server.shutdown(Duration::from_secs(10)))?;
    Ok(())
}
