//! The axum app of `axum.rs` on tickless, with its runtime's metrics for Prometheus: tickless's
//! `RuntimeMetricsReporter` publishes them to metrics-rs under tokio-metrics' names, and
//! `metrics-exporter-prometheus` renders them at `/metrics`, served by the app itself.
//!
//! ```text
//! cargo run --release -p tickless-ecosystem-tests --example prometheus -- [PORT]
//! curl http://127.0.0.1:3000/metrics       # tokio_workers_count 2, tokio_total_polls_count ...
//! ```
//!
//! `ecosystem/scripts/prometheus.sh` runs it under load with a real Prometheus scraping it, and
//! prints every series Prometheus found.

mod app;

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::get;
use metrics_exporter_prometheus::PrometheusBuilder;
use tickless::runtime::RuntimeMetricsReporterBuilder;

/// How often the reporter reads the runtime's metrics.
const INTERVAL: Duration = Duration::from_millis(500);

#[tickless::main]
async fn main() -> io::Result<()> {
    let port = app::port().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // The recorder alone: its text is served by the app below, on tickless.
    let prometheus = PrometheusBuilder::new()
        .install_recorder()
        .map_err(io::Error::other)?;
    // The runtime's metrics, every interval, as tokio-metrics' reporter publishes tokio's.
    tickless::spawn(
        RuntimeMetricsReporterBuilder::default()
            .with_interval(INTERVAL)
            .describe_and_run(),
    );
    let app = app::router(|d| Box::pin(tickless::time::sleep(d))).route(
        "/metrics",
        get(move || {
            let text = prometheus.render();
            async move { text }
        }),
    );
    let run = tickless_http::run(SocketAddr::from(([127, 0, 0, 1], port)), app);
    println!("listening on http://{}", run.local_addr()?);
    run.with_graceful_shutdown(async {
        let _ = tickless::signal::ctrl_c().await;
    })
    .await
}
