//! The benchmark harness's smoke (`bench/`, `scripts/bench.sh`): a tiny run of the real
//! binary on a leased cluster, with the host and the real FlussLakeTiering job, the raw scan,
//! the steady writer and the WASM tax. It checks that every figure is measured and written,
//! not how fast anything is: timings are the benchmark's business, never a test's.

use std::process::Command;

use fluss_lake_e2e::{cluster, repo_root};
use serde_json::Value;

#[test]
fn a_small_run_measures_every_figure_for_the_host_flink_and_the_limits() {
    let c = cluster::lease("paimon");
    let bin = repo_root().join("target/release/bench");
    assert!(
        bin.exists(),
        "{} is missing: cargo build --release -p fluss-lake-bench",
        bin.display()
    );
    let out = repo_root().join("target/bench-smoke");
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(&bin)
        .args(["run", "--check", "--cluster-held-by-parent"])
        .args(["--cluster-index", &c.index.to_string()])
        .args([
            "--workloads",
            "log3,steady",
            "--formats",
            "paimon",
            "--services",
            "host,flink",
        ])
        .args(["--scale", "0.002", "--tax-rows", "20000"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "bench run failed:\n{stderr}");

    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    let log3 = &result["backlog"][0];
    assert_eq!(log3["workload"], "log-3");
    assert_eq!(log3["records"], 20_000, "{log3}");
    for service in ["host", "flink"] {
        let f = &log3[service];
        assert_eq!(f["records"], 20_000, "{service}: {f}");
        assert!(
            f["lake"]["data_files"].as_u64().unwrap() >= 1,
            "{service}: {f}"
        );
        assert!(f["peak_rss_bytes"].as_u64().unwrap() > 0, "{service}: {f}");
        assert!(
            result["steady"][0][service]["samples"].as_u64().unwrap() >= 10,
            "{result}"
        );
    }
    assert_eq!(log3["raw_scan"]["records"], 20_000, "{log3}");
    assert_eq!(log3["limit"]["records"], 20_000, "{log3}");
    assert!(log3["limit"]["cpu_s"].as_f64().unwrap() > 0.0, "{log3}");
    assert_eq!(result["wasm_tax"][0]["records"], 20_000, "{result}");
    assert!(
        result["wasm_tax"][0]["data_plane_cpu_s"].as_f64().unwrap() > 0.0,
        "{result}"
    );
    assert!(result["targets"].as_array().unwrap().len() >= 5, "{result}");
    let md = std::fs::read_to_string(out.join("result.md")).unwrap();
    assert!(md.contains("| log-3 | paimon | 20000 | flink |"), "{md}");
    let svg = std::fs::read_to_string(out.join("chart.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("raw scan"), "{svg}");
}
