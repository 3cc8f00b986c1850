//! The check that a warehouse's store makes creates atomic, before anything is committed to it.
//!
//! Every format commits by creating the next snapshot (or version, or manifest pointer) only if
//! it does not exist: two writers racing for one snapshot number must not both win. On S3 that
//! is a `PUT` with `If-None-Match: *`. A store that ignores the header would let both writers
//! "succeed" and silently lose one commit, so the host creates one probe object twice: the
//! second create must be refused. A store that fails the probe is refused with one line naming
//! why, and nothing is committed to it. (Java Paimon's filesystem catalog on S3 commits by
//! rename, which is not atomic there without an external lock.)

use object_store::path::Path;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::Warehouse;
use crate::error::{Error, ErrorKind, Result, store_message};

/// Where probe objects go, under the warehouse root: not a table location (those are exactly
/// `<db><suffix>/<table><suffix>`, and Fluss names hold no `.`).
pub const PROBE_DIR: &str = ".fluss-lake-host";

/// Creates a probe object twice; the second create must fail with "already exists".
pub async fn check_atomic_create(warehouse: &Warehouse) -> Result<()> {
    let url = warehouse.url();
    // A random name: probes of several hosts never meet.
    let name = format!("probe-{}", uuid::Uuid::new_v4());
    let path: Path = warehouse
        .root()
        .parts()
        .chain(Path::from(PROBE_DIR).parts())
        .chain(Path::from(name.as_str()).parts())
        .collect();
    let create = || {
        warehouse.store().put_opts(
            &path,
            PutPayload::from_static(b"fluss-lake-host conditional put probe"),
            PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            },
        )
    };
    create().await.map_err(|e| refused(url, e))?;
    let second = create().await;
    // Best effort: a leftover probe object is harmless (and is not in any table).
    if let Err(e) = warehouse.store().delete(&path).await {
        tracing::warn!(
            warehouse = url,
            "could not delete the probe object {path}: {}",
            store_message(&e)
        );
    }
    match second {
        Err(object_store::Error::AlreadyExists { .. }) => Ok(()),
        Ok(_) => Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "warehouse '{url}': the store does not honour conditional puts (a second `If-None-Match: *` \
                 create of one object succeeded), so two commits could both win; refusing to commit to it"
            ),
        )),
        Err(object_store::Error::NotImplemented { .. })
        | Err(object_store::Error::NotSupported { .. }) => Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "warehouse '{url}': the store does not support conditional puts; refusing to commit to it"
            ),
        )),
        Err(e) => Err(refused(url, e)),
    }
}

/// The store refused or failed the probe: one line, with the kind a caller can act on.
fn refused(url: &str, e: object_store::Error) -> Error {
    let kind = match &e {
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => ErrorKind::Authentication,
        object_store::Error::NotImplemented { .. } | object_store::Error::NotSupported { .. } => {
            ErrorKind::Unsupported
        }
        _ => ErrorKind::Storage,
    };
    let what = match kind {
        ErrorKind::Authentication => "the store refused the credentials",
        ErrorKind::Unsupported => "the store does not support conditional puts",
        _ => "cannot write to the store",
    };
    Error::new(
        kind,
        format!("warehouse '{url}': {what}: {}", store_message(&e)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warehouse::StorageOptions;

    #[tokio::test]
    async fn a_local_warehouse_passes_and_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("probe-wh-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let wh = Warehouse::open(dir.to_str().unwrap(), &StorageOptions::default()).unwrap();
        check_atomic_create(&wh).await.unwrap();
        let left = std::fs::read_dir(dir.join(PROBE_DIR))
            .map(|d| d.count())
            .unwrap_or(0);
        assert_eq!(left, 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
