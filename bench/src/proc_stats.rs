//! What a process has used so far, from `/proc`: CPU seconds (user + system, every thread)
//! and its peak resident memory (`VmHWM`). Read while the process runs: both are gone once it
//! has exited and been reaped.

use anyhow::{Context, Result, anyhow};

/// Clock ticks per second of `/proc/<pid>/stat` (`sysconf(_SC_CLK_TCK)`; 100 on Linux).
const CLK_TCK: f64 = 100.0;

/// User + system CPU seconds of process `pid` (all its threads).
pub fn cpu_seconds(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("process {pid} is gone"))?;
    parse_cpu_seconds(&stat)
}

/// utime and stime are fields 14 and 15; the command name (field 2) may hold spaces and
/// parentheses, so the fields are counted after its last `)`.
fn parse_cpu_seconds(stat: &str) -> Result<f64> {
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| anyhow!("malformed /proc stat line"))?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| -> Result<f64> {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or_else(|| anyhow!("malformed /proc stat line"))
    };
    // After the name: state (3) is index 0, so utime (14) is index 11 and stime (15) 12.
    Ok((ticks(11)? + ticks(12)?) / CLK_TCK)
}

/// The peak resident set of process `pid`, in bytes (`VmHWM`).
pub fn peak_rss_bytes(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("process {pid} is gone"))?;
    parse_kib_field(&status, "VmHWM:").map(|kib| kib * 1024)
}

fn parse_kib_field(status: &str, field: &str) -> Result<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("no {field} in /proc status"))
}

/// This process's own CPU seconds.
pub fn own_cpu_seconds() -> Result<f64> {
    cpu_seconds(std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_fields_are_counted_after_the_command_name() {
        // A command name with a space and a parenthesis, as a JVM thread name can be.
        let line = "4242 (java (x) y) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 75 0 0 20 0 30 0";
        assert_eq!(parse_cpu_seconds(line).unwrap(), 3.25);
        assert!(parse_cpu_seconds("no name here").is_err());
    }

    #[test]
    fn the_peak_resident_set_is_read_in_kib() {
        let status = "Name:\tjava\nVmPeak:\t 9000 kB\nVmHWM:\t  734208 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(parse_kib_field(status, "VmHWM:").unwrap(), 734_208);
        assert!(parse_kib_field("Name: x\n", "VmHWM:").is_err());
    }

    #[test]
    fn this_process_is_measured() {
        assert!(own_cpu_seconds().unwrap() >= 0.0);
        assert!(peak_rss_bytes(std::process::id()).unwrap() > 0);
    }
}
