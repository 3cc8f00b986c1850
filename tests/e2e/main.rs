//! Every end-to-end and component test, in one test binary (one link of the host, wasmtime
//! and arrow instead of one per file). The modules are the groups `docs/development.md`
//! describes; run one with `cargo test --release --test e2e <group>::`.
//!
//! Tests that need a Fluss cluster take a lease on one of the pool's clusters
//! (`fluss_lake_e2e::cluster`), so tests run concurrently, each alone on its cluster.

mod bad_input;
mod bench;
mod client;
mod component;
mod faults;
mod maintenance;
mod migration;
mod operations;
mod s3;
mod stores;
mod tiering;

/// The harness's own helpers.
mod harness {
    use fluss_lake_e2e::iceberg::iceberg_bucket;

    #[test]
    fn bucket_function_matches_the_iceberg_spec() {
        // The Iceberg spec's test vector: hash(34L) = 2017239379.
        assert_eq!(iceberg_bucket(34, i32::MAX), 2017239379);
    }
}
