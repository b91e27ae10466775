//! redis-rs (`tokio-comp`) from tickless tasks under the tokio context, against a minimal RESP
//! server on loopback (no redis server on this machine): the client's connection is tokio's,
//! its replies wake the tickless task through the core's inbox.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpListener;

use tickless::Builder;
use tickless_ecosystem_tests::other;

/// One RESP command (an array of bulk strings), or `None` at end of stream.
fn read_command(r: &mut impl BufRead) -> io::Result<Option<Vec<String>>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let n: usize = line
        .trim_end()
        .trim_start_matches('*')
        .parse()
        .map_err(other)?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        line.clear();
        r.read_line(&mut line)?;
        let len: usize = line
            .trim_end()
            .trim_start_matches('$')
            .parse()
            .map_err(other)?;
        let mut data = vec![0u8; len + 2];
        r.read_exact(&mut data)?;
        data.truncate(len);
        args.push(String::from_utf8(data).map_err(other)?);
    }
    Ok(Some(args))
}

/// A RESP server for one connection: PING, SET, GET, INCR; `+OK` to anything else (the
/// client's handshake). Returns the commands it saw.
fn fake_redis(listener: TcpListener) -> io::Result<Vec<String>> {
    let (stream, _) = listener.accept()?;
    let mut out = stream.try_clone()?;
    let mut r = BufReader::new(stream);
    let mut store = HashMap::<String, String>::new();
    let mut seen = Vec::new();
    while let Some(cmd) = read_command(&mut r)? {
        let name = cmd[0].to_ascii_uppercase();
        let reply = match name.as_str() {
            "PING" => "+PONG\r\n".to_owned(),
            "SET" => {
                store.insert(cmd[1].clone(), cmd[2].clone());
                "+OK\r\n".to_owned()
            }
            "GET" => match store.get(&cmd[1]) {
                Some(v) => format!("${}\r\n{v}\r\n", v.len()),
                None => "$-1\r\n".to_owned(),
            },
            "INCR" => {
                let v = store.entry(cmd[1].clone()).or_insert_with(|| "0".into());
                let n: i64 = v.parse().map_err(other)?;
                *v = (n + 1).to_string();
                format!(":{}\r\n", n + 1)
            }
            _ => "+OK\r\n".to_owned(),
        };
        seen.push(name);
        out.write_all(reply.as_bytes())?;
    }
    Ok(seen)
}

#[test]
fn redis_commands_from_a_tickless_task_under_the_tokio_context() -> io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let server = std::thread::spawn(move || fake_redis(listener));
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let client = redis::Client::open(format!("redis://{addr}/")).map_err(other)?;
        let mut con = client
            .get_multiplexed_async_connection()
            .await
            .map_err(other)?;
        let pong: String = redis::cmd("PING")
            .query_async(&mut con)
            .await
            .map_err(other)?;
        assert_eq!(pong, "PONG");
        let () = redis::cmd("SET")
            .arg("greeting")
            .arg("hello")
            .query_async(&mut con)
            .await
            .map_err(other)?;
        let got: String = redis::cmd("GET")
            .arg("greeting")
            .query_async(&mut con)
            .await
            .map_err(other)?;
        assert_eq!(got, "hello");
        for want in 1..=3i64 {
            let n: i64 = redis::cmd("INCR")
                .arg("hits")
                .query_async(&mut con)
                .await
                .map_err(other)?;
            assert_eq!(n, want);
        }
        drop(con);
        io::Result::Ok(())
    })?;
    drop(rt);
    let seen = server.join().expect("server thread")?;
    for cmd in ["PING", "SET", "GET", "INCR"] {
        assert!(seen.iter().any(|c| c == cmd), "{cmd} not seen: {seen:?}");
    }
    Ok(())
}
