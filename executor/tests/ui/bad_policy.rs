#[tickless::test(timer_policy = Sometimes)]
async fn bad_policy() {}

fn main() {}
