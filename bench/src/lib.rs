//! The benchmark's pure parts: what it reads of a process from `/proc`, and the arithmetic over
//! its samples. A library beside the binary (src/main.rs) so that their unit tests build on
//! their own: a test build of the binary would compile the whole benchmark a second time, with
//! every future of the host and the test harness that it polls.

pub mod offsets;
pub mod proc_stats;
pub mod stats;
