//! The plugins' `.wasm` files in the host's plugin runtime, against temporary warehouses:
//! no Fluss cluster; read back by the formats' own readers (Python, Java).

mod data_plane;
mod delta;
mod evil_guests;
mod hive_catalog;
mod iceberg;
mod lance;
mod paimon_rest_catalog;
mod plugin_reload;
mod rest_catalog;
