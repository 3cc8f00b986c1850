//! The host under faults on a real cluster: crashes at random points, a frozen coordinator,
//! dropped tables, SIGTERM; each test leases a cluster of its own, so freezing or restarting
//! its servers touches no other test.

mod chaos;
mod coordinator_outage;
mod lifecycle;
mod tablet_crash;
