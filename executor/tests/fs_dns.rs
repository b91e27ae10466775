//! `tickless::fs` and `tickless::net::lookup_host`: on the blocking pool, errors as std's.

use std::io;

use tickless::Builder;

#[test]
fn files_round_trip_through_the_pool() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    let dir = std::env::temp_dir().join(format!("tickless-fs-{}", std::process::id()));
    rt.block_on(async {
        tickless::fs::create_dir_all(dir.join("a/b")).await?;
        let file = dir.join("a/b/data.bin");
        tickless::fs::write(&file, [0xffu8, 0xfe, 0]).await?;
        assert_eq!(tickless::fs::read(&file).await?, [0xff, 0xfe, 0]);
        assert_eq!(tickless::fs::metadata(&file).await?.len(), 3);
        let err = tickless::fs::read_to_string(&file).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "not UTF-8");
        tickless::fs::remove_file(&file).await?;
        let gone = tickless::fs::metadata(&file).await.unwrap_err();
        assert_eq!(gone.kind(), io::ErrorKind::NotFound);
        io::Result::Ok(())
    })?;
    assert!(
        rt.stats().blocking_threads >= 1,
        "the calls ran on the pool"
    );
    std::fs::remove_dir_all(dir)
}

#[test]
fn lookups_resolve_on_the_pool_and_fail_like_std() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let addrs: Vec<_> = tickless::net::lookup_host(("127.0.0.1", 8080))
            .await?
            .collect();
        assert_eq!(addrs, ["127.0.0.1:8080".parse().unwrap()]);
        let local: Vec<_> = tickless::net::lookup_host("localhost:80").await?.collect();
        assert!(!local.is_empty() && local.iter().all(|a| a.port() == 80));
        let no_port = tickless::net::lookup_host("127.0.0.1").await.err().unwrap();
        assert_eq!(no_port.kind(), io::ErrorKind::InvalidInput);
        io::Result::Ok(())
    })
}

#[test]
fn connect_by_host_name_looks_it_up_on_the_pool() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let threads_before = rt.stats().blocking_threads;
    rt.block_on(async {
        // A name, not an address: resolved off the core.
        let stream = tickless::net::TcpStream::connect(("localhost", port)).await;
        // localhost may resolve to ::1 first; 127.0.0.1 is among the addresses tried.
        let stream = stream?;
        assert_eq!(stream.peer_addr()?.port(), port);
        io::Result::Ok(())
    })?;
    assert_eq!(threads_before, 0);
    assert_eq!(rt.stats().blocking_threads, 1, "the lookup ran on the pool");
    // A literal address needs no lookup and no pool thread.
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(tickless::net::TcpStream::connect(listener.local_addr()?))?;
    assert_eq!(rt.stats().blocking_threads, 0);
    Ok(())
}
