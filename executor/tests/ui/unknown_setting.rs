#[tickless::test(threads = 4)]
async fn unknown() {}

fn main() {}
