//! What a port from tokio by a change of imports needs from tickless's names. Each is a compile
//! test first: without it this file does not build.

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
