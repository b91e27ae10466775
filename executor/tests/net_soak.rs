//! Soak: many concurrent connections to an echo server on every core, each sending random data
//! and checking every byte that comes back; every connection closes cleanly, and the process's
//! descriptor count returns to where it started.
//!
//! Short form by default (200 connections). The long form: 1,000 concurrent connections (or any
//! number) with
//!
//! ```text
//! TICKLESS_SOAK_CONNECTIONS=1000 cargo test --release -p tickless --test net_soak
//! ```
//!
//! which raises the soft `RLIMIT_NOFILE` if it is too low for two descriptors per connection.
//! Alone in its binary: it counts the process's descriptors.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::Duration;

use futures_lite::future::zip;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::{serve_per_core, TcpStream};
use tickless::time::{sleep, timeout};
use tickless::{spawn_local, Builder};

/// Connections in the short form.
const SHORT: usize = 200;
/// The largest payload of one connection.
const MAX_BYTES: usize = 8 * 1024;

/// Open descriptors of this process.
fn open_fds() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/fd")?.count())
}

/// Makes sure the process may open `needed` descriptors.
fn ensure_nofile(needed: usize) -> io::Result<()> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid `struct rlimit` for writes.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let needed = needed as libc::rlim_t;
    if lim.rlim_cur >= needed {
        return Ok(());
    }
    assert!(
        lim.rlim_max >= needed,
        "the soak needs {needed} descriptors; the hard limit is {}",
        lim.rlim_max
    );
    lim.rlim_cur = needed;
    // SAFETY: `lim` is a valid `struct rlimit` for reads.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// xorshift64*: reproducible pseudo-random bytes, seeded per connection.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// A one-shot flag another thread sets and a task awaits.
#[derive(Default)]
struct Done {
    set: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Done {
    fn set(&self) {
        self.set.store(true, Ordering::SeqCst);
        if let Some(w) = self.waker.lock().unwrap().take() {
            w.wake();
        }
    }

    async fn wait(&self) {
        poll_fn(|cx| {
            let mut w = self.waker.lock().unwrap();
            if self.set.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            *w = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

/// All the client tasks wait here until every connection is open: the connections are really
/// concurrent.
struct Barrier {
    left: Cell<usize>,
    waiters: RefCell<Vec<Waker>>,
}

impl Barrier {
    async fn wait(&self) {
        self.left.set(self.left.get() - 1);
        if self.left.get() == 0 {
            for w in self.waiters.borrow_mut().drain(..) {
                w.wake();
            }
        }
        poll_fn(|cx| {
            if self.left.get() == 0 {
                Poll::Ready(())
            } else {
                self.waiters.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }
}

/// The server side: echo until end of file, with an idle timeout per read; then close.
async fn echo(mut stream: TcpStream) -> io::Result<u64> {
    let mut buf = vec![0u8; 4096];
    let mut total = 0;
    loop {
        let n = timeout(Duration::from_secs(30), stream.read(&mut buf)).await??;
        if n == 0 {
            stream.close().await?;
            return Ok(total);
        }
        stream.write_all(&buf[..n]).await?;
        total += n as u64;
    }
}

/// One client: connect, wait for the others, send its bytes while reading the echo, half-close,
/// read to end of file, compare.
async fn client(addr: SocketAddr, seed: u64, barrier: Rc<Barrier>) -> io::Result<usize> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let len = 1 + (rng.next() as usize % MAX_BYTES);
    let data = rng.bytes(len);
    let stream = TcpStream::connect(addr).await?;
    barrier.wait().await;
    let send = async {
        let mut w = &stream;
        // In uneven pieces, to cross read boundaries on the server.
        let mut rest = &data[..];
        while !rest.is_empty() {
            let piece = rest.len().min(1 + (rng.next() as usize % 1500));
            w.write_all(&rest[..piece]).await?;
            rest = &rest[piece..];
        }
        stream.shutdown_std(Shutdown::Write)
    };
    let receive = async {
        let mut r = &stream;
        let mut back = Vec::with_capacity(len);
        r.read_to_end(&mut back).await?;
        io::Result::Ok(back)
    };
    let (sent, back) = zip(send, receive).await;
    sent?;
    let back = back?;
    assert_eq!(back.len(), data.len(), "connection {seed}: bytes lost");
    assert!(back == data, "connection {seed}: bytes corrupted");
    Ok(len)
}

#[test]
fn echo_soak_every_byte_back_every_connection_closed_no_descriptor_leaked() -> io::Result<()> {
    let n: usize = std::env::var("TICKLESS_SOAK_CONNECTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SHORT);
    ensure_nofile(2 * n + 256)?;

    let rt = Builder::new().cores(2).build()?;
    let before = open_fds()?;
    let clean = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(Mutex::new(Vec::new()));
    let (c, f) = (clean.clone(), failed.clone());
    let server = serve_per_core(&rt, "127.0.0.1:0".parse().unwrap(), move |stream, _conn| {
        let (c, f) = (c.clone(), f.clone());
        async move {
            match echo(stream).await {
                Ok(_) => c.fetch_add(1, Ordering::SeqCst),
                Err(e) => {
                    f.lock().unwrap().push(e.to_string());
                    0
                }
            };
        }
    })?;
    let addr = server.local_addr();
    // A listener per core, core 1's duplicate of core 0's (which it serves while no thread
    // is in `block_on`), and core 0's of each other core's (served while that core steps back).
    let listeners = rt.cores() + 1 + (rt.cores() - 1);
    assert_eq!(open_fds()?, before + listeners);

    // The clients: a runtime of their own, on a thread of their own.
    let done = Arc::new(Done::default());
    let d = done.clone();
    let clients = std::thread::spawn(move || -> io::Result<usize> {
        let out = (|| {
            let crt = Builder::new().cores(1).build()?;
            crt.block_on(async {
                let barrier = Rc::new(Barrier {
                    left: Cell::new(n),
                    waiters: RefCell::new(Vec::new()),
                });
                let tasks: Vec<_> = (0..n as u64)
                    .map(|i| spawn_local(client(addr, i + 1, barrier.clone())))
                    .collect();
                let mut bytes = 0;
                for t in tasks {
                    bytes += t.await??;
                }
                io::Result::Ok(bytes)
            })
        })();
        d.set();
        out
    });

    let stats = rt.block_on(async {
        done.wait().await;
        // The server closes each connection just after its client saw end of file; wait for
        // the last tasks to finish (at most 10 s of real time).
        for _ in 0..10_000 {
            if server.stats().total.open == 0 {
                break;
            }
            sleep(Duration::from_millis(1)).await;
        }
        server.stats()
    });
    let bytes = clients.join().expect("client thread")?;
    assert!(bytes >= n);
    assert_eq!(*failed.lock().unwrap(), Vec::<String>::new());
    assert_eq!(
        clean.load(Ordering::SeqCst),
        n,
        "connections closed cleanly"
    );
    assert_eq!(stats.total.accepted, n as u64);
    assert_eq!(stats.total.open, 0);
    assert_eq!(stats.total.accept_errors, 0);
    assert!(
        stats.cores.iter().all(|c| c.accepted > 0),
        "every core's listener took connections: {stats:?}"
    );
    // Every connection's descriptor is closed (the client runtime's too); the listeners remain.
    assert_eq!(open_fds()?, before + listeners);

    let report = rt.block_on(server.shutdown(Duration::from_secs(10)))?;
    assert_eq!((report.drained, report.aborted), (0, 0));
    assert_eq!(
        open_fds()?,
        before,
        "the server's descriptor count is back to its start"
    );
    Ok(())
}
