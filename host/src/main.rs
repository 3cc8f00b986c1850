//! `fluss-lake-host`: tiers Fluss tables into lake formats served by WebAssembly plugins.
//! Everything it does is in the library ([`fluss_lake_host::cli`]).

fn main() -> std::process::ExitCode {
    fluss_lake_host::cli::main()
}
