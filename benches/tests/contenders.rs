//! Every contender runs every workload, tiny: the glue is right (answers checked, no hang),
//! whatever the figures. No assertion on time.

use std::io;
use std::process::Command;
use std::time::Duration;

use tickless_benches::rt::{Contender, ALL};
use tickless_benches::workload::pingpong::{Mode, Plan};
use tickless_benches::workload::server;
use tickless_benches::workload::timers::{ChurnPlan, IdlePlan, SleepPlan};

/// The contenders that can run here (io_uring may be disabled), but `tickless_per_core`, which
/// runs `server_tokio_shape` alone.
fn contenders() -> Vec<(&'static str, Contender)> {
    ALL.iter()
        .copied()
        .filter(|(_, c)| *c != Contender::TicklessPerCore)
        .filter(|(name, c)| match c.available() {
            Ok(()) => true,
            Err(e) => {
                eprintln!("{name} skipped: {e}");
                false
            }
        })
        .collect()
}

#[test]
fn pingpong_in_every_mode() -> io::Result<()> {
    let two_cpus = tickless_benches::sys::allowed_cpus()?.len() >= 2;
    for (name, c) in contenders() {
        for mode in [Mode::Same, Mode::Cross, Mode::Timeout, Mode::Paired] {
            if mode == Mode::Cross && !two_cpus {
                continue;
            }
            // Paired: one block each way.
            let rtts = if mode == Mode::Paired { 2_000 } else { 50 };
            let run = c.pingpong(&Plan {
                mode,
                warmup: 10,
                rtts,
            })?;
            assert!(!run.elapsed.is_zero(), "{name} {mode:?}");
            assert_eq!(
                run.tickless.is_some(),
                name.starts_with("tickless"),
                "{name}: tickless's counters, and only tickless's"
            );
        }
    }
    Ok(())
}

#[test]
fn timer_workloads() -> io::Result<()> {
    let sleeps = SleepPlan {
        series: vec![
            (Duration::from_micros(100), 3),
            (Duration::from_millis(1), 2),
        ],
    };
    let idle = IdlePlan {
        tasks: 100,
        window: Duration::from_millis(20),
    };
    let churn = ChurnPlan {
        tasks: 20,
        min: Duration::from_millis(1),
        max: Duration::from_millis(5),
        warmup: Duration::from_millis(10),
        window: Duration::from_millis(50),
    };
    // tickless's policies and spinning change nothing here that the others don't cover.
    let timer_contenders = contenders()
        .into_iter()
        .filter(|(name, _)| !name.starts_with("tickless_") || *name == "tickless_slack1ms");
    for (name, c) in timer_contenders {
        if matches!(c, Contender::Floor) {
            assert!(c.sleeps(&sleeps).is_err(), "the floor has no timers");
            continue;
        }
        let late = c.sleeps(&sleeps)?;
        assert_eq!(
            late.iter().map(|l| l.count).collect::<Vec<_>>(),
            [3, 2],
            "{name}"
        );
        if matches!(c, Contender::Threads) {
            continue;
        }
        c.idle(idle)?;
        let r = c.churn(churn)?;
        assert!(r.late.count > 0, "{name}: no sleep completed in the window");
    }
    Ok(())
}

/// `server_tokio_shape`'s client: this package's `compare` binary, as `compare` starts it.
fn client(args: &[String]) -> io::Result<Command> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_compare"));
    cmd.args(["__child", "server_client"]).args(args);
    Ok(cmd)
}

/// `server_tokio_shape`'s plan for the tests: 2 cores, 8 connections, `hot` of them hot.
fn server_plan(hot: usize) -> server::Plan {
    server::Plan {
        cores: 2,
        conns: 8,
        client_threads: 2,
        warmup: Duration::from_millis(20),
        window: Duration::from_millis(100),
        hot,
    }
}

#[test]
fn server_tokio_shape_on_its_contenders() -> io::Result<()> {
    // Even, then skewed: 2 of the 8 connections keep 3 requests in flight each.
    for hot in [0, 2] {
        let plan = server_plan(hot);
        for name in ["tickless", "tokio", "tickless_per_core", "tickless_nosteal"] {
            let c = Contender::named(name).expect("a contender");
            let m = c.server(&plan, client)?;
            assert_eq!(m.conns.len(), 2, "{name}: a count per core or worker");
            assert_eq!(
                m.conns.iter().sum::<u64>(),
                8,
                "{name}: every connection counted once, where its handler started"
            );
            assert!(m.requests.iter().sum::<u64>() > 0, "{name}: {m:?}");
            assert!(m.rps > 0.0 && m.cpu_us_per_req > 0.0, "{name}: {m:?}");
            assert!(m.p50_us <= m.p99_us, "{name}: {m:?}");
            assert_eq!(
                m.moves.is_some(),
                c.is_tickless(),
                "{name}: tickless's counters are read, and only tickless has them"
            );
            if hot == 0 {
                assert_eq!(m.hot_share, 0.0, "{name}: no hot connection");
            } else {
                assert!(m.hot_share > 0.0 && m.hot_share < 1.0, "{name}: {m:?}");
            }
        }
    }
    let plan = server_plan(0);
    let e = Contender::Smol.server(&plan, client).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
    Ok(())
}

#[test]
fn server_client_reports_a_bad_server() -> io::Result<()> {
    // A server that answers every request wrongly: the client must fail, and say why.
    let plan = server::Plan {
        cores: 1,
        conns: 2,
        client_threads: 1,
        warmup: Duration::from_millis(10),
        window: Duration::from_millis(50),
        hot: 0,
    };
    let e = server::measure(&plan, client, |serving| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        serving.listening(listener.local_addr()?);
        let mut served = Vec::new();
        for _ in 0..plan.conns {
            let (stream, _) = listener.accept()?;
            served.push(std::thread::spawn(move || {
                use std::io::{BufRead, Write};
                let mut lines = io::BufReader::new(stream.try_clone()?);
                let mut line = String::new();
                while lines.read_line(&mut line)? > 0 {
                    (&stream).write_all(b"VALUE wrong\n")?;
                    line.clear();
                }
                io::Result::Ok(())
            }));
        }
        for s in served {
            let _ = s.join();
        }
        Ok(())
    })
    .unwrap_err();
    assert!(e.to_string().contains("the client failed"), "{e}");
    assert!(e.to_string().contains("answered"), "{e}");
    Ok(())
}
