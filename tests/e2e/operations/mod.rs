//! Operating the host: what Prometheus scrapes from it and `/readyz` says, and the one
//! self-contained binary started from a config file.

mod metrics;
mod single_binary;
