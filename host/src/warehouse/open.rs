//! Warehouses opened once per process: one client (and connection pool) per warehouse and set
//! of storage options, checked by [`super::probe`] before its first use. A failed open or check
//! is not remembered, so a store that was down is tried again by the next round.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use super::{StorageOptions, Warehouse, WarehouseUrl, probe};
use crate::error::Result;

type Key = (String, StorageOptions);

#[derive(Default)]
pub struct Warehouses {
    opened: Mutex<HashMap<Key, Arc<OnceCell<Arc<Warehouse>>>>>,
}

impl Warehouses {
    /// The warehouse at `url` opened with `options`, checked for atomic creates.
    pub async fn get(&self, url: &str, options: &StorageOptions) -> Result<Arc<Warehouse>> {
        // Options mean nothing to a local directory: one entry for it whatever they say.
        let options = match WarehouseUrl::parse(url)? {
            WarehouseUrl::Local(_) => StorageOptions::default(),
            WarehouseUrl::S3 { .. } | WarehouseUrl::Azure(_) | WarehouseUrl::Gcs { .. } => {
                options.clone()
            }
        };
        let cell = self
            .opened
            .lock()
            .expect("warehouse cache poisoned")
            .entry((url.to_string(), options.clone()))
            .or_default()
            .clone();
        cell.get_or_try_init(|| async {
            let warehouse = Warehouse::open(url, &options)?;
            probe::check_atomic_create(&warehouse).await?;
            tracing::info!(
                warehouse = url,
                "warehouse opened; its store makes creates atomic"
            );
            Ok(Arc::new(warehouse))
        })
        .await
        .cloned()
    }

    /// The store at `url` opened with `options` for one round alone, and checked there: for
    /// credentials a catalog vends for one table (scoped to its location, and short-lived),
    /// which would only pile up in the cache and may reach nothing outside the table.
    pub async fn open_for_round(&self, url: &str, options: &StorageOptions) -> Result<Warehouse> {
        let warehouse = Warehouse::open(url, options)?;
        probe::check_atomic_create(&warehouse).await?;
        Ok(warehouse)
    }
}
