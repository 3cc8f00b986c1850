//! Commits through a REST catalog, against a small in-memory catalog that checks the REST
//! spec's requirements and applies its updates as a server does (the end-to-end tests run
//! Apache Iceberg's own REST catalog server).

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
use serde_json::{Map, Value, json};

use crate::catalog::create_table_if_missing;
use crate::committer::IcebergCommitter;
use crate::tables;
use crate::writer::IcebergWriter;

/// What the fake does with the next commit.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Fault {
    None,
    /// Applies it, then answers an unknown outcome (a lost acknowledgement).
    ApplyThenUnknown,
    /// Answers an unknown outcome without applying it.
    Unknown,
    /// A rival's snapshot lands first.
    RivalFirst,
}

struct FakeRest {
    metadata: RefCell<Map<String, Value>>,
    version: Cell<u32>,
    faults: RefCell<Vec<Fault>>,
    commits: Cell<u32>,
    last_updates: RefCell<Vec<Value>>,
}

impl FakeRest {
    fn new(metadata: &[u8]) -> Rc<FakeRest> {
        let Value::Object(m) = serde_json::from_slice(metadata).unwrap() else {
            panic!()
        };
        Rc::new(FakeRest {
            metadata: RefCell::new(m),
            version: Cell::new(1),
            faults: RefCell::new(Vec::new()),
            commits: Cell::new(0),
            last_updates: RefCell::new(Vec::new()),
        })
    }

    fn state(&self) -> TableState {
        TableState {
            metadata_file: format!("metadata/{:05}-x.metadata.json", self.version.get()),
            metadata: serde_json::to_vec(&*self.metadata.borrow()).unwrap(),
        }
    }

    fn check(&self, requirements: &[Value]) -> bool {
        let m = self.metadata.borrow();
        requirements
            .iter()
            .all(|r| match r["type"].as_str().unwrap() {
                "assert-ref-snapshot-id" => {
                    let actual = m
                        .get("refs")
                        .and_then(|refs| refs.get(r["ref"].as_str().unwrap()))
                        .map(|x| x["snapshot-id"].clone())
                        .unwrap_or(Value::Null);
                    actual == r["snapshot-id"]
                }
                "assert-current-schema-id" => m["current-schema-id"] == r["current-schema-id"],
                other => panic!("unexpected requirement {other}"),
            })
    }

    fn apply(&self, updates: &[Value]) {
        let mut m = self.metadata.borrow_mut();
        for u in updates {
            match u["action"].as_str().unwrap() {
                "add-snapshot" => {
                    let s = u["snapshot"].clone();
                    m["last-sequence-number"] = s["sequence-number"].clone();
                    m.entry("snapshots")
                        .or_insert(json!([]))
                        .as_array_mut()
                        .unwrap()
                        .push(s);
                }
                "set-snapshot-ref" => {
                    let name = u["ref-name"].as_str().unwrap().to_string();
                    let mut r = u.as_object().unwrap().clone();
                    r.remove("action");
                    r.remove("ref-name");
                    if name == "main" {
                        m["current-snapshot-id"] = r["snapshot-id"].clone();
                    }
                    m.entry("refs").or_insert(json!({}))[&name] = Value::Object(r);
                }
                "remove-snapshots" => {
                    let ids: Vec<Value> = u["snapshot-ids"].as_array().unwrap().clone();
                    m["snapshots"]
                        .as_array_mut()
                        .unwrap()
                        .retain(|s| !ids.contains(&s["snapshot-id"]));
                }
                "set-properties" => {
                    for (k, v) in u["updates"].as_object().unwrap() {
                        m["properties"][k] = v.clone();
                    }
                }
                other => panic!("unexpected update {other}"),
            }
        }
        self.version.set(self.version.get() + 1);
    }

    /// A rival tiering job's snapshot on main (re-using the current one's manifest list).
    fn rival_commit(&self) {
        let current = self.metadata.borrow()["current-snapshot-id"].clone();
        let (list, seq) = {
            let m = self.metadata.borrow();
            let s = m["snapshots"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["snapshot-id"] == current)
                .unwrap()
                .clone();
            (
                s["manifest-list"].clone(),
                m["last-sequence-number"].as_i64().unwrap(),
            )
        };
        let id = 777_000 + seq;
        self.apply(&[
            json!({"action": "add-snapshot", "snapshot": {"snapshot-id": id, "parent-snapshot-id": current,
                "sequence-number": seq + 1, "timestamp-ms": 1, "manifest-list": list,
                "summary": {"operation": "append"}, "schema-id": 0}}),
            json!({"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": id, "type": "branch"}),
        ]);
    }
}

impl TableCatalog for FakeRest {
    fn kind(&self) -> CatalogKind {
        CatalogKind::IcebergRest
    }
    fn load(&self) -> Result<Option<TableState>> {
        Ok(Some(self.state()))
    }
    fn create(&self, _: &str) -> Result<TableState> {
        Err(Error::already_exists("exists"))
    }
    fn commit(&self, requirements: &str, updates: &str) -> Result<TableState> {
        self.commits.set(self.commits.get() + 1);
        let requirements: Vec<Value> = serde_json::from_str(requirements).unwrap();
        let updates: Vec<Value> = serde_json::from_str(updates).unwrap();
        *self.last_updates.borrow_mut() = updates.clone();
        let fault = {
            let mut faults = self.faults.borrow_mut();
            if faults.is_empty() {
                Fault::None
            } else {
                faults.remove(0)
            }
        };
        if fault == Fault::RivalFirst {
            self.rival_commit();
        }
        if !self.check(&requirements) {
            return Err(Error::conflict(
                "Requirement failed: branch main has changed",
            ));
        }
        match fault {
            Fault::Unknown => Err(Error::io(format!(
                "{UNKNOWN_OUTCOME}: 504 from the catalog"
            ))),
            Fault::ApplyThenUnknown => {
                self.apply(&updates);
                Err(Error::io(format!("{UNKNOWN_OUTCOME}: connection reset")))
            }
            _ => {
                self.apply(&updates);
                Ok(self.state())
            }
        }
    }
    fn swap_metadata_file(&self, _: &str, _: &str) -> Result<()> {
        unreachable!()
    }
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

/// A table created as a Hadoop table, then handed to the fake catalog (whose metadata the
/// plugin then only sees through the catalog).
fn rest_table() -> (MemoryStorage, Rc<FakeRest>, table_catalog::Installed) {
    let storage = MemoryStorage::new();
    let t = log_table(
        "db",
        "t",
        &[("id", "INT", false), ("name", "STRING", true)],
        &[],
        1,
        &[],
    );
    assert!(create_table_if_missing(&storage, &t, &pairs(&[("warehouse", "/wh")])).unwrap());
    let v1 = storage.get("metadata/v1.metadata.json").unwrap();
    storage.delete("metadata/v1.metadata.json").unwrap();
    storage.delete("metadata/version-hint.text").unwrap();
    let fake = FakeRest::new(&v1);
    let installed = table_catalog::install(fake.clone());
    (storage, fake, installed)
}

fn round(storage: &MemoryStorage, ids: &[i32], offset: i64, base: Option<i64>) -> Result<i64> {
    let t = log_table(
        "db",
        "t",
        &[("id", "INT", false), ("name", "STRING", true)],
        &[],
        1,
        &[],
    );
    let config = [("warehouse", "/wh")];
    let mut w = IcebergWriter::open(&writer_context(&t, 0, None, &config), storage)?;
    w.write(make_row_batch(&batch(ids), offset, 9)?)?;
    let r = w.complete()?;
    let mut c = IcebergCommitter::open(committer_context(&t, &config), storage)?;
    let props = vec![("fluss-offsets".to_string(), format!("/o/{offset}"))];
    Ok(c.commit(&c.to_committable(&[r.payload])?, &props, base)?
        .snapshot_id)
}

fn snapshot_ids(fake: &FakeRest) -> Vec<i64> {
    fake.metadata.borrow()["snapshots"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| s["snapshot-id"].as_i64().unwrap())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn tiering_commits_are_update_lists_the_catalog_applies() {
    let (storage, fake, _installed) = rest_table();
    assert_eq!(tables::kind(), CatalogKind::IcebergRest);
    let first = round(&storage, &[1, 2], 0, None).unwrap();
    let updates = fake.last_updates.borrow().clone();
    let actions: Vec<&str> = updates
        .iter()
        .map(|u| u["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["add-snapshot", "set-snapshot-ref"]);
    assert!(
        !storage
            .list("metadata")
            .unwrap()
            .iter()
            .any(|o| o.path.ends_with(".metadata.json")),
        "the catalog writes metadata files, not the plugin"
    );
    let second = round(&storage, &[3], 2, Some(first)).unwrap();
    assert_eq!(snapshot_ids(&fake), [first, second]);
    let loaded = tables::load(&storage).unwrap().unwrap();
    assert_eq!(loaded.metadata.current_snapshot_id(), Some(second));
    assert_eq!(loaded.version, 3);
    // A round planned from the first snapshot after the second was tiered cannot commit.
    let e = round(&storage, &[4], 3, Some(first)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
}

#[test]
fn a_lost_race_in_the_catalog_is_retried_on_the_new_state() {
    let (storage, fake, _installed) = rest_table();
    let first = round(&storage, &[1], 0, None).unwrap();
    fake.faults.borrow_mut().push(Fault::RivalFirst);
    let ours = round(&storage, &[2], 1, Some(first)).unwrap();
    let ids = snapshot_ids(&fake);
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(ids[2], ours, "ours rebuilt on the rival's snapshot");
    let m = tables::load(&storage).unwrap().unwrap().metadata;
    assert_eq!(
        m.current_snapshot().unwrap().unwrap().parent_snapshot_id,
        Some(ids[1])
    );
}

#[test]
fn a_lost_acknowledgement_is_recognised_and_never_applied_twice() {
    let (storage, fake, _installed) = rest_table();
    fake.faults.borrow_mut().push(Fault::ApplyThenUnknown);
    let first = round(&storage, &[1], 0, None).unwrap();
    assert_eq!(snapshot_ids(&fake), [first]);
    // Not applied, then repeated: applied once.
    fake.faults.borrow_mut().push(Fault::Unknown);
    let before = fake.commits.get();
    let second = round(&storage, &[2], 1, Some(first)).unwrap();
    assert_eq!(fake.commits.get() - before, 2);
    assert_eq!(snapshot_ids(&fake), [first, second]);
}

#[test]
fn an_outcome_that_stays_unknown_keeps_every_file() {
    let (storage, fake, _installed) = rest_table();
    let first = round(&storage, &[1], 0, None).unwrap();
    let files_before = storage.list("").unwrap().len();
    fake.faults
        .borrow_mut()
        .extend([Fault::Unknown, Fault::Unknown, Fault::Unknown]);
    let e = round(&storage, &[2], 1, Some(first)).unwrap_err();
    assert!(e.message().contains(UNKNOWN_OUTCOME), "{e}");
    assert_eq!(snapshot_ids(&fake), [first]);
    assert!(
        storage.list("").unwrap().len() > files_before,
        "the data file, manifest and manifest list stay"
    );
}

#[test]
fn a_change_a_catalog_cannot_carry_is_refused_before_any_request() {
    let (storage, fake, _installed) = rest_table();
    let loaded = tables::load(&storage).unwrap().unwrap();
    let mut fields = loaded.metadata.fields().clone();
    fields.insert("location".into(), json!("/elsewhere"));
    let moved =
        crate::metadata::TableMetadata::parse(&serde_json::to_vec(&fields).unwrap()).unwrap();
    let Err(e) = tables::publication(&loaded, &moved, vec![], ()) else {
        panic!("a location change must be refused")
    };
    assert_eq!(e.kind(), ErrorKind::Internal, "{e}");
    assert_eq!(fake.commits.get(), 0);
}

#[test]
fn expiry_removes_snapshots_through_the_catalog_and_then_their_files() {
    let (storage, fake, _installed) = rest_table();
    let mut base = None;
    let mut ids = Vec::new();
    for round_no in 0..4 {
        let id = round(&storage, &[round_no], round_no as i64, base).unwrap();
        ids.push(id);
        base = Some(id);
    }
    let lists_before = storage
        .list("metadata")
        .unwrap()
        .iter()
        .filter(|o| o.path.contains("snap-"))
        .count();
    let config = pairs(&[
        ("history.expire.max-snapshot-age-ms", "0"),
        ("history.expire.min-snapshots-to-keep", "2"),
    ]);
    let far_future = || i64::MAX / 2;
    let done = crate::expire::expire(
        &storage,
        &config,
        ids.last().copied(),
        &far_future,
        i64::MAX,
    )
    .unwrap();
    assert_eq!(done.snapshots, 2, "{done:?}");
    let actions: Vec<String> = fake
        .last_updates
        .borrow()
        .iter()
        .map(|u| u["action"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(actions, ["remove-snapshots"]);
    assert_eq!(snapshot_ids(&fake), ids[2..]);
    let lists_after = storage
        .list("metadata")
        .unwrap()
        .iter()
        .filter(|o| o.path.contains("snap-"))
        .count();
    assert_eq!(
        lists_after,
        lists_before - 2,
        "the expired manifest lists went"
    );
    // Every file the remaining snapshots reference is still there.
    for id in &ids[2..] {
        let m = tables::load(&storage).unwrap().unwrap().metadata;
        let s = m.snapshot(*id).unwrap().unwrap();
        let rel = fluss_lake_guest_sdk::layout::relative_path("/wh/db/t", &s.manifest_list)
            .unwrap()
            .to_string();
        assert!(storage.head(&rel).unwrap().is_some(), "{rel}");
    }
}
