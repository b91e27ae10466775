//! What the tokio context costs a request: a TCP echo client on a tickless core talking to a
//! blocking echo server thread on loopback (the same peer every time), done three ways:
//! tickless's own streams on the core; tokio's streams through the tokio context (their I/O
//! polled by the core's own tokio runtime, which the core parks in: no wake crosses threads);
//! and plain tokio on a current-thread runtime.
//!
//! ```sh
//! cargo run --release -p tickless --features tokio-compat,tokio-io --example tokio_context_cost
//! ```
//!
//! Prints each way's round trips per second, its ratio to tickless's own streams, and the
//! remote wakes per round trip the core received (and had to be woken for).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ROUNDS: usize = 20_000;
const MSG: usize = 64;

/// A blocking echo server for one connection of `ROUNDS` messages, on a thread of its own.
fn echo_peer() -> io::Result<(SocketAddr, std::thread::JoinHandle<io::Result<()>>)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut buf = [0u8; MSG];
        for _ in 0..ROUNDS {
            s.read_exact(&mut buf)?;
            s.write_all(&buf)?;
        }
        Ok(())
    });
    Ok((addr, peer))
}

/// `ROUNDS` round trips on `stream`; the time they took.
async fn rounds<S: AsyncReadExt + AsyncWriteExt + Unpin>(mut stream: S) -> io::Result<Duration> {
    let mut buf = [0u8; MSG];
    let start = Instant::now();
    for _ in 0..ROUNDS {
        stream.write_all(&buf).await?;
        stream.read_exact(&mut buf).await?;
    }
    Ok(start.elapsed())
}

fn main() -> io::Result<()> {
    let rt = tickless::Builder::new()
        .cores(1)
        .tokio_context(true)
        .build()?;

    let (addr, peer) = echo_peer()?;
    let before = rt.stats().total;
    let native = rt.block_on(async {
        let c = tickless::net::TcpStream::connect(addr).await?;
        c.set_nodelay(true)?;
        rounds(c).await
    })?;
    let native_wakes = rt.stats().total - before;
    peer.join().expect("peer")?;

    let (addr, peer) = echo_peer()?;
    let before = rt.stats().total;
    let compat = rt.block_on(async {
        let c = tokio::net::TcpStream::connect(addr).await?;
        c.set_nodelay(true)?;
        rounds(c).await
    })?;
    let compat_wakes = rt.stats().total - before;
    peer.join().expect("peer")?;
    drop(rt);

    let (addr, peer) = echo_peer()?;
    let plain = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let c = tokio::net::TcpStream::connect(addr).await?;
            c.set_nodelay(true)?;
            rounds(c).await
        })?;
    peer.join().expect("peer")?;

    let rate = |t: Duration| ROUNDS as f64 / t.as_secs_f64();
    let per = |n: u64| n as f64 / ROUNDS as f64;
    let n = rate(native);
    println!(
        "way=tickless_streams rtt_per_s={n:.0} ratio=1.00 remote_wakes_per_rtt={:.2} \
         remote_wakes_sent_per_rtt={:.2}",
        per(native_wakes.remote_wakes_sent + native_wakes.remote_wakes_avoided),
        per(native_wakes.remote_wakes_sent)
    );
    println!(
        "way=tokio_streams_in_tokio_context rtt_per_s={:.0} ratio={:.2} remote_wakes_per_rtt={:.2} \
         remote_wakes_sent_per_rtt={:.2}",
        rate(compat),
        rate(compat) / n,
        per(compat_wakes.remote_wakes_sent + compat_wakes.remote_wakes_avoided),
        per(compat_wakes.remote_wakes_sent)
    );
    println!(
        "way=plain_tokio_current_thread rtt_per_s={:.0} ratio={:.2}",
        rate(plain),
        rate(plain) / n
    );
    Ok(())
}
