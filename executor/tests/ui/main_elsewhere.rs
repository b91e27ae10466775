#[tickless::main]
async fn start() {}

fn main() {}
