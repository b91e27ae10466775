//! A socket shared by tasks on two cores, the tokio way: an `Arc<UdpSocket>` with a `recv` loop
//! on each core. Each core registers it once, where its task waits on it, and never again,
//! whatever the traffic: no move per datagram, so nothing of it grows (each registration a
//! core makes is one binding the socket keeps), and no datagram is lost. Counted, never timed:
//! every wait is bounded by counts, with a generous hang guard only.

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use tickless::net::UdpSocket;
use tickless::runtime::Builder;
use tickless::{Runtime, Stats};

/// Datagrams sent (each carries its number).
const DATAGRAMS: u32 = 100_000;
/// Datagrams in flight at most: the sender waits for the readers, so the socket's receive
/// buffer never overflows (a loss there would be the kernel's, not the runtime's).
const WINDOW: u32 = 64;
/// The one-byte datagram that ends a reader's loop.
const STOP: &[u8] = b"s";
/// The hang guard of every wait on another core's counters: a test that needs it failed.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// What the readers share: which datagrams arrived (how many times each), how many did, and how
/// many readers have waited once (so the test knows where the socket is registered).
struct Book {
    /// Arrivals per datagram number.
    seen: Vec<AtomicU8>,
    /// Datagrams received, by all readers.
    received: AtomicU32,
    /// Readers that found nothing to read once, and so wait on their core.
    waiting: AtomicUsize,
}

/// A `recv` loop until a stop datagram: books each datagram; returns how many it read and on
/// which core.
async fn reader(socket: Arc<UdpSocket>, book: Arc<Book>) -> io::Result<(u32, usize)> {
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
            return Ok((mine, tickless::core_id()));
        }
        let i = u32::from_le_bytes(buf[..4].try_into().expect("four bytes"));
        book.seen[i as usize].fetch_add(1, Ordering::Relaxed);
        book.received.fetch_add(1, Ordering::SeqCst);
        mine += 1;
    }
}

/// Once both readers wait, sends `DATAGRAMS` numbered datagrams to `to`, at most `WINDOW` ahead
/// of the readers, then one stop datagram a reader.
fn send_all(to: SocketAddr, book: &Book) -> io::Result<()> {
    let start = Instant::now();
    while book.waiting.load(Ordering::SeqCst) < 2 {
        assert!(start.elapsed() < HANG_GUARD, "the readers never waited");
        thread::yield_now();
    }
    let out = std::net::UdpSocket::bind("127.0.0.1:0")?;
    for i in 0..DATAGRAMS {
        while i - book.received.load(Ordering::SeqCst) >= WINDOW {
            assert!(start.elapsed() < HANG_GUARD, "stuck at datagram {i}");
            thread::yield_now();
        }
        out.send_to(&i.to_le_bytes(), to)?;
    }
    while book.received.load(Ordering::SeqCst) < DATAGRAMS {
        assert!(start.elapsed() < HANG_GUARD, "datagrams lost");
        thread::yield_now();
    }
    for _ in 0..2 {
        out.send_to(STOP, to)?;
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
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_udp_socket_read_from_two_cores_registers_once_with_each() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let before = rt.stats();
    let std_socket = std::net::UdpSocket::bind("127.0.0.1:0")?;
    let to = std_socket.local_addr()?;
    let book = Arc::new(Book {
        seen: (0..DATAGRAMS).map(|_| AtomicU8::new(0)).collect(),
        received: AtomicU32::new(0),
        waiting: AtomicUsize::new(0),
    });
    let sender = {
        let book = book.clone();
        thread::spawn(move || send_all(to, &book))
    };
    let handle = rt.handle(1);
    let (on_zero, on_one) = rt.block_on(async {
        let socket = Arc::new(UdpSocket::from_std(std_socket)?);
        // Core 0's loop waits first: the socket registers with core 0. Core 1's starts then,
        // and finds a task waiting on core 0: it registers with core 1 as well.
        let zero = reader(socket.clone(), book.clone());
        let one = async {
            while book.waiting.load(Ordering::SeqCst) < 1 {
                tickless::time::sleep(Duration::from_millis(1)).await;
            }
            let (socket, book) = (socket.clone(), book.clone());
            let task = handle.spawn_pinned(move || reader(socket, book));
            task.await.expect("core 1's reader panicked")
        };
        let (zero, one) = futures_lite::future::zip(zero, one).await;
        io::Result::Ok((zero?, one?))
    })?;
    sender.join().expect("the sender panicked")?;
    assert_eq!((on_zero.1, on_one.1), (0, 1), "one reader on each core");
    assert_eq!(on_zero.0 + on_one.0, DATAGRAMS, "every datagram read once");
    assert!(
        book.seen.iter().all(|n| n.load(Ordering::Relaxed) == 1),
        "no datagram lost or read twice"
    );
    // Each core registered it once (one binding each), and it never moved; its registrations
    // are gone with the socket.
    let stats = stats_when(&rt, |s| {
        s.cores[1].io_registered > before.cores[1].io_registered
            && s.cores[1].io_registrations == before.cores[1].io_registrations
    });
    for core in [0, 1] {
        let (now, then) = (&stats.cores[core], &before.cores[core]);
        assert_eq!(
            now.io_registered - then.io_registered,
            1,
            "core {core} registered it once"
        );
        assert_eq!(now.io_registrations, then.io_registrations, "core {core}");
    }
    assert_eq!(
        (stats.cores[0].io_rebinds, stats.cores[1].io_rebinds),
        (0, 1),
        "core 1 registered it while it was core 0's; nothing moved"
    );
    assert_eq!(stats.total.task_panics, 0);
    Ok(())
}
