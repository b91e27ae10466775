//! Every workload on tickless and on the runtimes its users would pick instead; see
//! `tickless_benches::compare` for the options and the output.
//!
//! ```text
//! cargo run --release -p tickless-benches --bin compare -- --quick
//! ```

fn main() -> std::process::ExitCode {
    tickless_benches::compare::main()
}
