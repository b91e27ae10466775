//! The default core count: the CPUs the process may use, from its affinity mask and its
//! container's CPU quota, as `std::thread::available_parallelism` (and tokio) read them. Each
//! case runs this test binary again as a child under the restriction (`taskset`, a cgroup CPU
//! quota) and reads the core count it prints.

use std::io;
use std::process::Command;

/// Set in the child: print the default runtime's core count and exit.
const CHILD: &str = "TICKLESS_DEFAULT_CORES_CHILD";

/// In the child (and harmlessly in the parent's own run): the default runtime's core count.
#[test]
fn child_prints_default_cores() -> io::Result<()> {
    let rt = tickless::Runtime::new()?;
    if std::env::var_os(CHILD).is_some() {
        println!("cores={}", rt.cores());
    }
    Ok(())
}

/// Runs `child_prints_default_cores` as a child under `prefix` (a shell command line that
/// ends by running the test binary) and returns the core count it printed.
fn child_cores(prefix: &str) -> io::Result<usize> {
    let exe = std::env::current_exe()?;
    let line = format!(
        "{prefix} '{}' --exact child_prints_default_cores --nocapture --test-threads=1",
        exe.display()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(&line)
        .env(CHILD, "1")
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{line}: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cores = stdout
        .lines()
        .find_map(|l| l.split_once("cores=").map(|(_, n)| n))
        .unwrap_or_else(|| panic!("{line} printed no core count:\n{stdout}"));
    let digits: String = cores.chars().take_while(char::is_ascii_digit).collect();
    Ok(digits.parse().expect("a number"))
}

/// The CPUs of this process's affinity mask.
fn mask() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn the_default_is_one_core_per_cpu_of_the_affinity_mask() -> io::Result<()> {
    assert_eq!(child_cores("exec")?, mask());
    if mask() < 2 {
        eprintln!("skipped the taskset case: one CPU only, nothing to restrict");
        return Ok(());
    }
    if Command::new("taskset").arg("--version").output().is_err() {
        eprintln!("skipped the taskset case: no taskset on this machine");
        return Ok(());
    }
    assert_eq!(child_cores("exec taskset -c 0")?, 1);
    Ok(())
}

/// Under a cgroup CPU quota of one CPU's time (v1's `cpu.cfs_quota_us`, or v2's `cpu.max`),
/// the default is one core, whatever the mask says. Skipped, saying so, where this process
/// cannot make a cgroup (not root, no cpu controller).
#[test]
fn the_default_follows_the_cgroup_cpu_quota() -> io::Result<()> {
    if mask() < 2 {
        eprintln!("skipped: one CPU only, a quota of one CPU changes nothing");
        return Ok(());
    }
    let name = format!("tickless-test-{}", std::process::id());
    let v1 = std::path::Path::new("/sys/fs/cgroup/cpu").join(&name);
    let v2 = std::path::Path::new("/sys/fs/cgroup").join(&name);
    let (dir, limits): (_, &[(&str, &str)]) = if std::fs::create_dir(&v1).is_ok() {
        (
            v1,
            &[
                ("cpu.cfs_period_us", "100000"),
                ("cpu.cfs_quota_us", "100000"),
            ],
        )
    } else if std::fs::create_dir(&v2).is_ok() {
        (v2, &[("cpu.max", "100000 100000")])
    } else {
        eprintln!("skipped: no cgroup could be made here (not root, or no cpu controller)");
        return Ok(());
    };
    let result = (|| {
        for (file, value) in limits {
            std::fs::write(dir.join(file), value)?;
        }
        let procs = dir.join("cgroup.procs");
        child_cores(&format!("echo $$ > '{}' && exec", procs.display()))
    })();
    // The child has exited: the cgroup is empty and can go.
    let _ = std::fs::remove_dir(&dir);
    match result {
        Ok(cores) => assert_eq!(cores, 1, "a quota of one CPU"),
        Err(e) => eprintln!("skipped: the cgroup could not be set up: {e}"),
    }
    Ok(())
}
