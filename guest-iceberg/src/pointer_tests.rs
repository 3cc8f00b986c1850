//! Commits to a table a metastore keeps by the location of its current metadata file
//! (Iceberg's Glue catalog), against a small in-memory metastore that swaps its pointer only
//! from the expected file, as the host's Glue client does (the end-to-end tests run moto's
//! Glue).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use arrow_array::{Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use fluss_lake_guest_sdk::commit::UNKNOWN_OUTCOME;
use fluss_lake_guest_sdk::ipc::make_row_batch;
use fluss_lake_guest_sdk::plugin::{FormatCommitter, FormatWriter};
use fluss_lake_guest_sdk::storage::{MemoryStorage, Storage};
use fluss_lake_guest_sdk::table_catalog::{self, CatalogKind, TableCatalog, TableState};
use fluss_lake_guest_sdk::testing::{committer_context, log_table, pairs, writer_context};
use fluss_lake_guest_sdk::{Error, ErrorKind, Result};
use serde_json::{Value, json};

use crate::catalog::create_table_if_missing;
use crate::committer::IcebergCommitter;
use crate::metadata::TableMetadata;
use crate::tables::{self, next_pointer_file};
use crate::writer::IcebergWriter;

/// What the fake does with the next swap.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Fault {
    /// Swaps, then answers an unknown outcome (a lost acknowledgement).
    ApplyThenUnknown,
    /// Answers an unknown outcome without swapping.
    Unknown,
    /// A rival writer commits a snapshot first.
    RivalFirst,
}

/// A metastore holding the table's current metadata file; the files are in the table's
/// storage, which it reads as the host does.
struct FakeGlue {
    storage: Rc<MemoryStorage>,
    pointer: RefCell<Option<String>>,
    faults: RefCell<Vec<Fault>>,
    swaps: Cell<u32>,
}

impl FakeGlue {
    fn pointer(&self) -> String {
        self.pointer.borrow().clone().unwrap()
    }

    fn current(&self) -> TableMetadata {
        TableMetadata::parse(&self.storage.get(&self.pointer()).unwrap()).unwrap()
    }

    /// A rival writer's snapshot on main (re-using the current one's manifest list), published
    /// as Java's Glue catalog does: a new file, then the pointer.
    fn rival_commit(&self) {
        let current = self.current();
        let mut m = current.fields().clone();
        let parent = current.current_snapshot_id().unwrap();
        let s = current.snapshot(parent).unwrap().unwrap();
        let seq = m["last-sequence-number"].as_i64().unwrap() + 1;
        let id = 777_000 + seq;
        let list = m["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["snapshot-id"] == json!(parent))
            .unwrap()["manifest-list"]
            .clone();
        m["snapshots"].as_array_mut().unwrap().push(json!({
            "snapshot-id": id, "parent-snapshot-id": parent, "sequence-number": seq,
            "timestamp-ms": s.timestamp_ms + 1, "manifest-list": list,
            "summary": {"operation": "append"}, "schema-id": 0}));
        m["last-sequence-number"] = json!(seq);
        m["current-snapshot-id"] = json!(id);
        m["refs"]["main"] = json!({"snapshot-id": id, "type": "branch"});
        let file = next_pointer_file(&self.pointer());
        self.storage
            .put(&file, &serde_json::to_vec(&m).unwrap())
            .unwrap();
        *self.pointer.borrow_mut() = Some(file);
    }
}

impl TableCatalog for FakeGlue {
    fn kind(&self) -> CatalogKind {
        CatalogKind::MetadataPointer
    }
    fn load(&self) -> Result<Option<TableState>> {
        let Some(file) = self.pointer.borrow().clone() else {
            return Ok(None);
        };
        Ok(Some(TableState {
            metadata: self.storage.get(&file)?,
            metadata_file: file,
        }))
    }
    fn create(&self, _: &str) -> Result<TableState> {
        unreachable!("a metastore's table is never created by the plugin")
    }
    fn commit(&self, _: &str, _: &str) -> Result<TableState> {
        unreachable!("a metastore takes no update lists")
    }
    fn swap_metadata_file(&self, expected: &str, new: &str) -> Result<()> {
        self.swaps.set(self.swaps.get() + 1);
        assert!(
            new.starts_with("metadata/") && new.ends_with(".metadata.json"),
            "{new}"
        );
        assert!(
            self.storage.head(new).unwrap().is_some(),
            "the new file is written before the swap"
        );
        let fault = {
            let mut f = self.faults.borrow_mut();
            (!f.is_empty()).then(|| f.remove(0))
        };
        match fault {
            Some(Fault::Unknown) => {
                return Err(Error::io(format!("{UNKNOWN_OUTCOME}: 500 from Glue")));
            }
            Some(Fault::RivalFirst) => self.rival_commit(),
            _ => {}
        }
        if self.pointer() != expected {
            return Err(Error::conflict(
                "Glue: ConcurrentModificationException: the table was updated concurrently",
            ));
        }
        *self.pointer.borrow_mut() = Some(new.to_string());
        match fault {
            Some(Fault::ApplyThenUnknown) => {
                Err(Error::io(format!("{UNKNOWN_OUTCOME}: connection reset")))
            }
            _ => Ok(()),
        }
    }
}

fn table() -> fluss_lake_guest_sdk::wit::TableInfo {
    log_table(
        "db",
        "t",
        &[("id", "INT", false), ("name", "STRING", true)],
        &[],
        1,
        &[],
    )
}

fn batch(ids: &[i32]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("name", DataType::Utf8, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int32Array::from(ids.to_vec())),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("n{i}")),
            )),
        ],
    )
    .unwrap()
}

/// A table as Java's Glue catalog creates it: `metadata/00000-<uuid>.metadata.json`, named by
/// the metastore.
fn glue_table() -> (Rc<MemoryStorage>, Rc<FakeGlue>, table_catalog::Installed) {
    let storage = Rc::new(MemoryStorage::new());
    assert!(create_table_if_missing(&*storage, &table(), &pairs(&[("warehouse", "/wh")])).unwrap());
    let v1 = storage.get("metadata/v1.metadata.json").unwrap();
    storage.delete("metadata/v1.metadata.json").unwrap();
    storage.delete("metadata/version-hint.text").unwrap();
    let first = "metadata/00000-1b4b7c1e-0000-4000-8000-000000000000.metadata.json";
    storage.put(first, &v1).unwrap();
    let fake = Rc::new(FakeGlue {
        storage: storage.clone(),
        pointer: RefCell::new(Some(first.to_string())),
        faults: RefCell::new(Vec::new()),
        swaps: Cell::new(0),
    });
    let installed = table_catalog::install(fake.clone());
    (storage, fake, installed)
}

fn round(storage: &MemoryStorage, ids: &[i32], offset: i64, base: Option<i64>) -> Result<i64> {
    let t = table();
    let config = [("warehouse", "/wh")];
    let mut w = IcebergWriter::open(&writer_context(&t, 0, None, &config), storage)?;
    w.write(make_row_batch(&batch(ids), offset, 9)?)?;
    let r = w.complete()?;
    let mut c = IcebergCommitter::open(committer_context(&t, &config), storage)?;
    let props = vec![("fluss-offsets".to_string(), format!("/o/{offset}"))];
    Ok(c.commit(&c.to_committable(&[r.payload])?, &props, base)?
        .snapshot_id)
}

fn metadata_files(storage: &MemoryStorage) -> Vec<String> {
    let mut files: Vec<String> = storage
        .list("metadata")
        .unwrap()
        .into_iter()
        .map(|o| o.path)
        .filter(|p| p.ends_with(".metadata.json"))
        .collect();
    files.sort();
    files
}

fn snapshot_ids(fake: &FakeGlue) -> Vec<i64> {
    fake.current().fields()["snapshots"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| s["snapshot-id"].as_i64().unwrap())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn commits_write_java_named_metadata_files_and_swap_the_pointer() {
    let (storage, fake, _installed) = glue_table();
    assert_eq!(tables::kind(), CatalogKind::MetadataPointer);
    let first_file = fake.pointer();
    let first = round(&storage, &[1, 2], 0, None).unwrap();
    let after_first = fake.pointer();
    assert!(
        after_first.starts_with("metadata/00001-") && after_first.ends_with(".metadata.json"),
        "{after_first}"
    );
    let second = round(&storage, &[3], 2, Some(first)).unwrap();
    assert!(
        fake.pointer().starts_with("metadata/00002-"),
        "{}",
        fake.pointer()
    );
    assert_eq!(snapshot_ids(&fake), [first, second]);
    assert_eq!(fake.swaps.get(), 2);
    // Every version stays (the metastore's readers may be on an older one), none is a
    // Hadoop version file, and there is no version hint.
    let files = metadata_files(&storage);
    assert_eq!(files.len(), 3, "{files:?}");
    assert!(
        storage
            .head("metadata/version-hint.text")
            .unwrap()
            .is_none()
    );
    // metadata-log names the replaced files, absolute, as Java records them.
    let log = fake.current().metadata_log_files();
    assert_eq!(
        log,
        [
            format!("/wh/db/t/{first_file}"),
            format!("/wh/db/t/{after_first}")
        ]
    );
    let loaded = tables::load(&*storage).unwrap().unwrap();
    assert_eq!(loaded.version, 2);
    assert_eq!(loaded.metadata.current_snapshot_id(), Some(second));
    // A round planned from the first snapshot after the second was tiered cannot commit.
    let e = round(&storage, &[4], 3, Some(first)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(metadata_files(&storage).len(), 3, "nothing left behind");
}

#[test]
fn a_lost_race_for_the_pointer_is_retried_on_the_rival_and_leaves_no_file() {
    let (storage, fake, _installed) = glue_table();
    let first = round(&storage, &[1], 0, None).unwrap();
    fake.faults.borrow_mut().push(Fault::RivalFirst);
    let ours = round(&storage, &[2], 1, Some(first)).unwrap();
    let ids = snapshot_ids(&fake);
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(ids[2], ours, "ours rebuilt on the rival's snapshot");
    let m = fake.current();
    assert_eq!(
        m.current_snapshot().unwrap().unwrap().parent_snapshot_id,
        Some(ids[1])
    );
    assert!(
        fake.pointer().starts_with("metadata/00003-"),
        "{}",
        fake.pointer()
    );
    // The table's first file, ours of round one, the rival's and ours of round two: the
    // metadata file of the attempt that lost is deleted.
    assert_eq!(metadata_files(&storage).len(), 4);
}

#[test]
fn a_lost_answer_is_recognised_and_a_swap_not_applied_repeated() {
    let (storage, fake, _installed) = glue_table();
    fake.faults.borrow_mut().push(Fault::ApplyThenUnknown);
    let first = round(&storage, &[1], 0, None).unwrap();
    assert_eq!((snapshot_ids(&fake), fake.swaps.get()), (vec![first], 1));
    fake.faults.borrow_mut().push(Fault::Unknown);
    let second = round(&storage, &[2], 1, Some(first)).unwrap();
    assert_eq!(fake.swaps.get(), 3);
    assert_eq!(snapshot_ids(&fake), [first, second]);
    assert_eq!(metadata_files(&storage).len(), 3);
}

#[test]
fn an_outcome_that_stays_unknown_keeps_every_file() {
    let (storage, fake, _installed) = glue_table();
    let first = round(&storage, &[1], 0, None).unwrap();
    let files_before = storage.list("").unwrap().len();
    fake.faults.borrow_mut().extend([Fault::Unknown; 3]);
    let e = round(&storage, &[2], 1, Some(first)).unwrap_err();
    assert!(e.message().contains(UNKNOWN_OUTCOME), "{e}");
    assert_eq!(snapshot_ids(&fake), [first]);
    // The data file, manifest, manifest list and the new metadata file stay.
    assert!(storage.list("").unwrap().len() >= files_before + 4);
    assert_eq!(metadata_files(&storage).len(), 3);
}

#[test]
fn a_table_the_metastore_does_not_have_is_not_created_by_the_plugin() {
    let (storage, fake, _installed) = glue_table();
    *fake.pointer.borrow_mut() = None;
    let e = tables::load(&*storage).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    let e =
        create_table_if_missing(&*storage, &table(), &pairs(&[("warehouse", "/wh")])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(storage.head("metadata/v1.metadata.json").unwrap().is_none());
}

#[test]
fn a_change_the_host_would_refuse_is_refused_before_any_file_is_written() {
    let (storage, fake, _installed) = glue_table();
    let loaded = tables::load(&*storage).unwrap().unwrap();
    let mut fields = loaded.metadata.fields().clone();
    fields.insert("location".into(), Value::from("/elsewhere"));
    let moved = TableMetadata::parse(&serde_json::to_vec(&fields).unwrap()).unwrap();
    let Err(e) = tables::publication(&loaded, &moved, vec![], ()) else {
        panic!("a location change must be refused")
    };
    assert_eq!(e.kind(), ErrorKind::Internal, "{e}");
    assert_eq!(fake.swaps.get(), 0);
    assert_eq!(metadata_files(&storage).len(), 1);
}

#[test]
fn new_metadata_files_are_numbered_as_java_numbers_them() {
    for (current, prefix) in [
        ("metadata/00000-a.metadata.json", "metadata/00001-"),
        ("metadata/00041-b-c.metadata.json", "metadata/00042-"),
        ("metadata/123456-b.metadata.json", "metadata/123457-"),
        ("metadata/v3.metadata.json", "metadata/00000-"),
        ("metadata/x-y.metadata.json", "metadata/00000-"),
    ] {
        let next = next_pointer_file(current);
        assert!(next.starts_with(prefix), "{current} → {next}");
        let uuid = next
            .strip_prefix(prefix)
            .and_then(|r| r.strip_suffix(".metadata.json"))
            .unwrap();
        assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{next}");
    }
    assert_ne!(
        next_pointer_file("metadata/00001-a.metadata.json"),
        next_pointer_file("metadata/00001-a.metadata.json")
    );
}
