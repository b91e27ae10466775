#[tickless::test]
fn not_async() {}

fn main() {}
