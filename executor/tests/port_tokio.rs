//! What a port from tokio by a change of imports needs from tickless's names. Each is a compile
//! test first: without it this file does not build.

use tickless::time::{sleep, Duration, Instant};
use tickless::Builder;

#[test]
fn tickless_time_has_tokio_s_duration() -> std::io::Result<()> {
    let rt = Builder::new().cores(1).start_paused(true).build()?;
    rt.block_on(async {
        let start = Instant::now();
        sleep(Duration::from_secs(1)).await;
        // The paused clock jumps to the sleep's window's end.
        assert!(start.elapsed() >= Duration::from_secs(1));
    });
    Ok(())
}
