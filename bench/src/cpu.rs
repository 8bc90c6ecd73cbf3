//! What a process has cost, read from `/proc`: shared by the bench binaries.

/// Nanoseconds a process has been on a CPU: the sum over its threads
/// (`/proc/<pid>/task/*/schedstat`, exact, unlike the ticks of `stat`).
pub fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}
