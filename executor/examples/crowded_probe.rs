//! A probe, not a benchmark: a two-core echo server under a closed-loop client of two
//! threads on the same CPUs (64 connections, 3 s), the CPUs crowded by the client; prints
//! requests/s and each core's `yields`, `harvests` and `steals`, to see
//! `Builder::yield_when_crowded` act (on by default; `crowded_probe stay` turns it off):
//!
//! ```sh
//! cargo run --release -p tickless --example crowded_probe
//! cargo run --release -p tickless --example crowded_probe -- stay
//! ```
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_lite::{AsyncReadExt, AsyncWriteExt};

fn main() -> std::io::Result<()> {
    let yield_on = !std::env::args().any(|a| a == "stay");
    let rt = tickless::Builder::new()
        .cores(2)
        .yield_when_crowded(yield_on)
        .build()?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let done = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let (done, count) = (done.clone(), count.clone());
            std::thread::spawn(move || {
                let mut conns: Vec<_> = (0..32)
                    .map(|_| std::net::TcpStream::connect(addr).expect("connect"))
                    .collect();
                let mut buf = [0u8; 64];
                // Until the server goes (its runtime dropped: the connections reset).
                while !done.load(Ordering::Relaxed) {
                    for c in conns.iter_mut() {
                        if c.write_all(&buf).is_err() {
                            return;
                        }
                    }
                    for c in conns.iter_mut() {
                        if c.read_exact(&mut buf).is_err() {
                            return;
                        }
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let d2 = done.clone();
    rt.block_on(async move {
        let listener = tickless::net::TcpListener::from_std(listener).unwrap();
        let server = tickless::spawn(async move {
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                tickless::spawn(async move {
                    let mut buf = [0u8; 64];
                    while s.read_exact(&mut buf).await.is_ok() {
                        if s.write_all(&buf).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        tickless::time::sleep(Duration::from_secs(1)).await;
        let start = Instant::now();
        let before = count.load(Ordering::Relaxed);
        tickless::time::sleep(Duration::from_secs(3)).await;
        let n = count.load(Ordering::Relaxed) - before;
        println!(
            "yield={yield_on} rps={:.0}",
            n as f64 / start.elapsed().as_secs_f64()
        );
        d2.store(true, Ordering::Relaxed);
        server.abort();
    });
    let stats = rt.stats();
    for (i, c) in stats.cores.iter().enumerate() {
        println!(
            "core {i}: yields={} harvests={} steals={} rebinds={} polls={} alive={}",
            c.yields, c.harvests, c.steals, c.io_rebinds, c.polls, c.alive_tasks
        );
    }
    drop(rt);
    for c in clients {
        let _ = c.join();
    }
    Ok(())
}
