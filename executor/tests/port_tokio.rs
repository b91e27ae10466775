//! What a port from tokio by a change of imports needs from tickless's names: `time::Duration`,
//! `net::ToSocketAddrs` for a user's own generic `connect`, and `stream.shutdown().await` with
//! tokio's `AsyncWriteExt` in scope (feature `tokio-io`). Each is a compile test first: without
//! it this file does not build. And tokio's pattern for a synchronous wrapper, a client that owns
//! its runtime and moves between threads (`Runtime: Send`).

use std::io;

use tickless::net::{TcpListener, TcpStream, ToSocketAddrs};
use tickless::time::{sleep, Duration, Instant};
use tickless::Builder;

#[test]
fn tickless_time_has_tokio_s_duration() -> io::Result<()> {
    let rt = Builder::new().cores(1).start_paused(true).build()?;
    rt.block_on(async {
        let start = Instant::now();
        sleep(Duration::from_secs(1)).await;
        // The paused clock jumps to the sleep's window's end.
        assert!(start.elapsed() >= Duration::from_secs(1));
    });
    Ok(())
}

/// A user's own connect, generic over what tickless's `TcpStream::connect` takes.
async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
    TcpStream::connect(addr).await
}

#[test]
fn a_users_connect_can_be_generic_over_tickless_net_to_socket_addrs() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        // A SocketAddr, an (IP string, port) and a "host:port" string.
        let by_addr = connect(addr).await?;
        let by_pair = connect(("127.0.0.1", addr.port())).await?;
        let by_string = connect(format!("127.0.0.1:{}", addr.port())).await?;
        for client in [by_addr, by_pair, by_string] {
            let (_server, peer) = listener.accept().await?;
            assert_eq!(peer, client.local_addr()?);
        }
        Ok(())
    })
}

/// Bounds a wait that would otherwise hang a failing test.
const HANG: Duration = Duration::from_secs(10);

#[test]
fn a_tokio_shaped_client_half_closes_with_async_write_ext_shutdown() -> io::Result<()> {
    use tickless::time::timeout;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        // An echo that answers once the client has finished sending (end of file).
        let server = tickless::spawn(async move {
            let (mut conn, _peer) = listener.accept().await?;
            let mut all = Vec::new();
            conn.read_to_end(&mut all).await?;
            conn.write_all(&all).await?;
            conn.shutdown().await
        });
        let mut client = connect(("127.0.0.1", port)).await?;
        client.write_all(b"bye").await?;
        // tokio's `AsyncWriteExt::shutdown`, not a method of the stream's own: the write side
        // closes and the server's read_to_end ends.
        client.shutdown().await?;
        let mut back = Vec::new();
        timeout(HANG, client.read_to_end(&mut back))
            .await
            .expect("the server saw the end of the client's writes")?;
        assert_eq!(back, b"bye");
        timeout(HANG, server)
            .await
            .expect("the server ends")
            .expect("the server task does not panic")
    })
}

/// tokio's pattern for bridging with synchronous code: a blocking client that owns its runtime
/// and its connection, with `block_on` in each method.
struct BlockingEcho {
    rt: tickless::Runtime,
    stream: TcpStream,
}

impl BlockingEcho {
    fn connect(addr: std::net::SocketAddr) -> io::Result<BlockingEcho> {
        let rt = Builder::new().cores(1).build()?;
        let stream = rt.block_on(TcpStream::connect(addr))?;
        Ok(BlockingEcho { rt, stream })
    }

    fn echo(&mut self, msg: &[u8]) -> io::Result<Vec<u8>> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let stream = &mut self.stream;
        self.rt.block_on(async {
            stream.write_all(msg).await?;
            let mut back = vec![0; msg.len()];
            stream.read_exact(&mut back).await?;
            Ok(back)
        })
    }
}

#[test]
fn a_blocking_client_that_owns_its_runtime_is_send_and_works_from_another_thread() -> io::Result<()>
{
    use std::io::{Read, Write};
    fn send<T: Send>(_: &T) {}
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let server = std::thread::spawn(move || -> io::Result<()> {
        let (mut conn, _) = listener.accept()?;
        let mut buf = [0u8; 64];
        loop {
            match conn.read(&mut buf)? {
                0 => return Ok(()),
                n => conn.write_all(&buf[..n])?,
            }
        }
    });
    let mut client = BlockingEcho::connect(addr)?;
    send(&client);
    assert_eq!(client.echo(b"here")?, b"here");
    // The client, its runtime and its stream (registered with core 0 on this thread) move on.
    let mut client = std::thread::spawn(move || -> io::Result<BlockingEcho> {
        assert_eq!(client.echo(b"there")?, b"there");
        Ok(client)
    })
    .join()
    .unwrap()?;
    assert_eq!(client.echo(b"back")?, b"back");
    drop(client);
    server.join().unwrap()
}
