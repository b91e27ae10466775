// The key-value server of `server_tokio_shape`, written as a tokio user writes a server (tokio's
// tutorial, mini-redis): one listener, one accept loop, a task per connection, the map behind
// `Arc<Mutex<..>>`. It is `include!`d twice: under tokio's imports (`rt/tokio.rs`) and under
// tickless's (`rt/tickless.rs`), which bring `TcpListener`, `TcpStream`, `spawn` and `worker`
// into scope; everything else is this file, the same bytes on both runtimes. `worker()` and
// `seen` are the benchmark's own instrumentation (which core or worker thread served), not part
// of the server.

use std::io;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::workload::server::{answer, Db, Placement};

/// Accepts connections until an accept fails, each served by a task of its own.
pub async fn serve(listener: TcpListener, db: Db, seen: Arc<Placement>) -> io::Result<()> {
    loop {
        let (socket, _) = listener.accept().await?;
        socket.set_nodelay(true)?;
        let db = db.clone();
        let seen = seen.clone();
        spawn(async move {
            // A client that resets its connection ends it: no error of the server's.
            let _ = connection(socket, db, seen).await;
        });
    }
}

/// Answers a connection's requests, a line each, until it closes.
pub async fn connection(socket: TcpStream, db: Db, seen: Arc<Placement>) -> io::Result<()> {
    seen.connection(worker());
    let mut socket = BufReader::new(socket);
    let mut line = Vec::new();
    let mut reply = Vec::new();
    loop {
        line.clear();
        if socket.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        reply.clear();
        answer(&db, &line, &mut reply);
        socket.write_all(&reply).await?;
        seen.request(worker());
    }
}
