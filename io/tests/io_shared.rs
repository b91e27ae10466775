//! One socket polled from several cores: an `Arc<UdpSocket>` with a `recv` loop on each of two
//! reactors' threads (tokio's way of sharing a socket) stays registered with each reactor where
//! it waits, once: no registration, no `epoll_ctl` per datagram, whatever the traffic, and no
//! datagram lost. Counted, never timed.

mod common;

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use common::block_on;
use tickless_io::internal::{IoStats, Reactor};
use tickless_io::UdpSocket;

/// Datagrams sent (each carries its number): enough to show that nothing grows with traffic.
const DATAGRAMS: u32 = 100_000;
/// Datagrams in flight at most: the sender waits for the readers, so the socket's receive
/// buffer never overflows (a loss there would be the kernel's, not the runtime's).
const WINDOW: u32 = 64;
/// The one-byte datagram that ends a reader's loop.
const STOP: &[u8] = b"s";

/// What the readers share: which datagrams arrived (how many times each), how many did, and how
/// many readers have waited once (so the test knows where the socket is registered).
struct Book {
    /// Arrivals per datagram number.
    seen: Vec<AtomicU8>,
    /// Datagrams received, by all readers.
    received: AtomicU32,
    /// Readers that found nothing to read once, and so wait in the socket's registration.
    waiting: AtomicUsize,
}

/// A `recv` loop until a stop datagram: books each datagram; returns how many it read.
async fn reader(socket: Arc<UdpSocket>, book: Arc<Book>) -> io::Result<u32> {
    let (mut buf, mut announced, mut mine) = ([0u8; 8], false, 0);
    loop {
        let n = poll_fn(|cx| {
            let polled = socket.poll_recv(cx, &mut buf);
            if polled.is_pending() && !announced {
                announced = true;
                book.waiting.fetch_add(1, Ordering::SeqCst);
            }
            polled
        })
        .await?;
        if buf[..n] == *STOP {
            return Ok(mine);
        }
        let i = u32::from_le_bytes(buf[..4].try_into().expect("four bytes"));
        book.seen[i as usize].fetch_add(1, Ordering::Relaxed);
        book.received.fetch_add(1, Ordering::SeqCst);
        mine += 1;
    }
}

/// Runs a reader on a reactor of its own, on a thread of its own, once `go(book)` says so;
/// returns what it read and its reactor's counters.
fn reader_thread(
    socket: Arc<UdpSocket>,
    book: Arc<Book>,
    go: impl Fn(&Book) -> bool + Send + 'static,
) -> thread::JoinHandle<io::Result<(u32, IoStats)>> {
    thread::spawn(move || {
        while !go(&book) {
            thread::yield_now();
        }
        let reactor = Reactor::new()?;
        let _enter = reactor.enter();
        let read = block_on(&reactor, reader(socket, book))?;
        Ok((read, reactor.stats()))
    })
}

/// A fresh book.
fn book() -> Arc<Book> {
    Arc::new(Book {
        seen: (0..DATAGRAMS).map(|_| AtomicU8::new(0)).collect(),
        received: AtomicU32::new(0),
        waiting: AtomicUsize::new(0),
    })
}

/// Sends `DATAGRAMS` numbered datagrams to `to`, at most `WINDOW` ahead of the readers, then
/// one stop datagram a reader.
fn send_all(to: SocketAddr, book: &Book, readers: usize) -> io::Result<()> {
    let out = std::net::UdpSocket::bind("127.0.0.1:0")?;
    for i in 0..DATAGRAMS {
        while i - book.received.load(Ordering::SeqCst) >= WINDOW {
            thread::yield_now();
        }
        out.send_to(&i.to_le_bytes(), to)?;
    }
    while book.received.load(Ordering::SeqCst) < DATAGRAMS {
        thread::yield_now();
    }
    for _ in 0..readers {
        out.send_to(STOP, to)?;
    }
    Ok(())
}

#[test]
fn a_socket_read_from_two_reactors_registers_once_with_each() -> io::Result<()> {
    let std_socket = std::net::UdpSocket::bind("127.0.0.1:0")?;
    let to = std_socket.local_addr()?;
    let socket = Arc::new(UdpSocket::from_std(std_socket)?);
    let book = book();
    // The first reader registers the socket with its reactor and waits there; the second
    // starts then, so it finds a task waiting on the first reactor: the socket is shared.
    let first = reader_thread(socket.clone(), book.clone(), |_| true);
    let second = reader_thread(socket.clone(), book.clone(), |b| {
        b.waiting.load(Ordering::SeqCst) >= 1
    });
    while book.waiting.load(Ordering::SeqCst) < 2 {
        thread::yield_now();
    }
    send_all(to, &book, 2)?;
    let (read0, stats0) = first.join().expect("the first reader panicked")?;
    let (read1, stats1) = second.join().expect("the second reader panicked")?;

    assert_eq!(read0 + read1, DATAGRAMS, "every datagram read once");
    assert!(
        book.seen.iter().all(|n| n.load(Ordering::Relaxed) == 1),
        "no datagram lost or read twice"
    );
    // One registration with each reactor, one `epoll_ctl` each (an edge-triggered socket is
    // added once): none per datagram, so no binding is left behind either.
    let counts = |s: &IoStats| (s.registered, s.rebinds, s.epoll_ctls);
    assert_eq!(counts(&stats0), (1, 0, 1), "the first reactor: {stats0:?}");
    assert_eq!(counts(&stats1), (1, 1, 1), "the second reactor: {stats1:?}");
    // Both still hold it: neither moved it away.
    assert_eq!((stats0.registrations, stats1.registrations), (1, 1));
    assert_eq!(stats0.orphans_freed + stats1.orphans_freed, 0);
    Ok(())
}

#[test]
fn a_socket_a_second_reactor_joins_while_datagrams_flow_registers_at_most_twice() -> io::Result<()>
{
    let std_socket = std::net::UdpSocket::bind("127.0.0.1:0")?;
    let to = std_socket.local_addr()?;
    let socket = Arc::new(UdpSocket::from_std(std_socket)?);
    let book = book();
    // The second reader starts while the first is busy with traffic: it may find no task
    // waiting on the first reactor, and move the read; the first reader then brings it back,
    // which shows it shared. Then neither registers it again, whatever the traffic.
    let first = reader_thread(socket.clone(), book.clone(), |_| true);
    let second = reader_thread(socket.clone(), book.clone(), |b| {
        b.received.load(Ordering::SeqCst) >= 1_000
    });
    while book.waiting.load(Ordering::SeqCst) < 1 {
        thread::yield_now();
    }
    send_all(to, &book, 2)?;
    let (read0, stats0) = first.join().expect("the first reader panicked")?;
    let (read1, stats1) = second.join().expect("the second reader panicked")?;

    assert_eq!(read0 + read1, DATAGRAMS, "every datagram read once");
    assert!(
        book.seen.iter().all(|n| n.load(Ordering::Relaxed) == 1),
        "no datagram lost or read twice"
    );
    assert!(
        stats0.registered <= 2 && stats0.epoll_ctls <= 2 && stats0.rebinds <= 1,
        "the first reactor: {stats0:?}"
    );
    assert_eq!(
        (stats1.registered, stats1.rebinds, stats1.epoll_ctls),
        (1, 1, 1),
        "the second reactor: {stats1:?}"
    );
    assert_eq!((stats0.registrations, stats1.registrations), (1, 1));
    Ok(())
}
