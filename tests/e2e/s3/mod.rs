//! Lake warehouses and Fluss remote logs on the test S3 server (`cluster/s3/start.sh`: moto,
//! IAM authentication on): the store's conditional creates under concurrent writers, a store
//! without them refused, wrong credentials, and tables tiered on the S3 cluster
//! ([`fluss_lake_e2e::cluster::lease_s3`]) read back by the formats' readers through S3.

mod conditional_creates;
mod large_files;
mod lance;
mod paimon;
mod remote_log;
