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
