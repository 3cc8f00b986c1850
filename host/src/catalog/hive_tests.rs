//! The Hive Metastore client against an in-process metastore speaking Thrift's binary
//! protocol as a Hive 4 metastore does (`get_table`, `alter_table_with_environment_context`
//! with its expected-parameter condition), and against answers a metastore never gives. The
//! real metastore is the end-to-end tests' (`tiering::iceberg_hive`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::hive::*;
use super::pointer::MetadataPointer;
use super::thrift::{self, DecodeError, MessageType, Struct, Value, ttype};
use crate::error::ErrorKind;

/// What the fake does with the next `alter_table` call.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Normal,
    /// Applies the update and closes the connection without answering.
    ApplyAndDrop,
    /// Answers bytes that are not Thrift.
    Garbage,
    /// Answers a MetaException without applying.
    MetaError,
}

#[derive(Default)]
struct State {
    tables: BTreeMap<(String, String), Struct>,
    mode: Option<Mode>,
    alters: Vec<Struct>,
    /// Every call, in order (`lock`, `get_table_req`, `alter_table_...`, `unlock`).
    calls: Vec<String>,
    /// Answer `WAITING` to this many lock checks before granting.
    waits: usize,
    /// Locks granted and not released.
    held: Vec<i64>,
}

fn table(location: &str, metadata: &str) -> Struct {
    Struct::new()
        .with(1, Value::string("t"))
        .with(2, Value::string("db"))
        .with(3, Value::string("owner"))
        .with(
            7,
            Value::Struct(
                Struct::new()
                    .with(
                        1,
                        Value::List {
                            element: ttype::STRUCT,
                            items: vec![Value::Struct(
                                Struct::new()
                                    .with(1, Value::string("id"))
                                    .with(2, Value::string("bigint")),
                            )],
                        },
                    )
                    .with(2, Value::string(location)),
            ),
        )
        .with(
            9,
            Value::Map {
                key: ttype::STRING,
                value: ttype::STRING,
                entries: vec![
                    (Value::string("EXTERNAL"), Value::string("TRUE")),
                    (Value::string("table_type"), Value::string("ICEBERG")),
                    (Value::string("metadata_location"), Value::string(metadata)),
                ],
            },
        )
        .with(12, Value::string("EXTERNAL_TABLE"))
        // A field this host's Hive version does not know: sent back as it came.
        .with(99, Value::I64(7))
}

fn exception(message: &str) -> Value {
    Value::Struct(Struct::new().with(1, Value::string(message)))
}

async fn serve(state: Arc<Mutex<State>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let state = state.clone();
            tokio::spawn(async move {
                let mut bytes = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head, args) = loop {
                    match thrift::read_message(&bytes) {
                        Ok(m) => break m,
                        Err(DecodeError::Incomplete) => {}
                        Err(e) => panic!("{e}"),
                    }
                    let n = stream.read(&mut chunk).await.unwrap();
                    if n == 0 {
                        return;
                    }
                    bytes.extend_from_slice(&chunk[..n]);
                };
                let lock_response = |id: i64, state: i32| {
                    Struct::new().with(
                        0,
                        Value::Struct(
                            Struct::new()
                                .with(1, Value::I64(id))
                                .with(2, Value::I32(state)),
                        ),
                    )
                };
                // get_table_req's arguments are one request struct.
                let names = match head.name.as_str() {
                    "get_table_req" => args.get(1).unwrap().as_struct().unwrap().clone(),
                    _ => args.clone(),
                };
                let key = (
                    names.str(1).unwrap_or_default().to_lowercase(),
                    names.str(2).unwrap_or_default().to_lowercase(),
                );
                let mut drop_answer = false;
                let mut garbage = false;
                let reply = {
                    let mut state = state.lock().unwrap();
                    state.calls.push(head.name.clone());
                    match head.name.as_str() {
                        "lock" => {
                            let request = args.get(1).unwrap().as_struct().unwrap();
                            let Some(Value::List { items, .. }) = request.get(1) else {
                                panic!("a lock request without components")
                            };
                            let component = items[0].as_struct().unwrap();
                            assert_eq!(component.get(1), Some(&Value::I32(3)), "EXCLUSIVE");
                            assert_eq!(component.get(2), Some(&Value::I32(2)), "TABLE");
                            assert_eq!(component.str(3), Some("db"));
                            assert_eq!(component.str(4), Some("t"));
                            let id = 100 + state.calls.len() as i64;
                            state.held.push(id);
                            lock_response(id, if state.waits > 0 { 2 } else { 1 })
                        }
                        "check_lock" => {
                            let id = match args.get(1).unwrap().as_struct().unwrap().get(1) {
                                Some(Value::I64(id)) => *id,
                                other => panic!("{other:?}"),
                            };
                            if state.waits > 0 {
                                state.waits -= 1;
                            }
                            lock_response(id, if state.waits > 0 { 2 } else { 1 })
                        }
                        "unlock" => {
                            let id = match args.get(1).unwrap().as_struct().unwrap().get(1) {
                                Some(Value::I64(id)) => *id,
                                other => panic!("{other:?}"),
                            };
                            state.held.retain(|h| *h != id);
                            Struct::new()
                        }
                        "get_table_req" => match state.tables.get(&key) {
                            Some(t) => Struct::new().with(
                                0,
                                Value::Struct(Struct::new().with(1, Value::Struct(t.clone()))),
                            ),
                            None => Struct::new().with(2, exception("no such table")),
                        },
                        "alter_table_with_environment_context" => {
                            let new = args.get(3).unwrap().as_struct().unwrap().clone();
                            let env = args.get(4).unwrap().as_struct().unwrap().clone();
                            state.alters.push(new.clone());
                            let mode = state.mode.take().unwrap_or(Mode::Normal);
                            let env: BTreeMap<&str, &str> = env.string_map(1).into_iter().collect();
                            let current = state.tables.get(&key).unwrap().clone();
                            let now: BTreeMap<&str, &str> =
                                current.string_map(9).into_iter().collect();
                            let expected_key = env["expected_parameter_key"];
                            if now.get(expected_key) != env.get("expected_parameter_value") {
                                Struct::new().with(
                                    2,
                                    exception(&format!(
                                        "The table has been modified. The parameter value for key '{expected_key}' is '{}'.",
                                        now[expected_key]
                                    )),
                                )
                            } else {
                                match mode {
                                    Mode::MetaError => {
                                        Struct::new().with(2, exception("database is locked"))
                                    }
                                    Mode::Garbage => {
                                        garbage = true;
                                        Struct::new()
                                    }
                                    Mode::Normal | Mode::ApplyAndDrop => {
                                        state.tables.insert(key, new);
                                        drop_answer = mode == Mode::ApplyAndDrop;
                                        Struct::new()
                                    }
                                }
                            }
                        }
                        other => panic!("unexpected call {other}"),
                    }
                };
                if drop_answer {
                    return;
                }
                if garbage {
                    stream.write_all(b"HTTP/1.1 400 Bad\r\n\r\n").await.ok();
                    return;
                }
                let mut out = Vec::new();
                thrift::write_message(
                    &mut out,
                    &head.name,
                    MessageType::Reply,
                    head.seq_id,
                    &reply,
                );
                stream.write_all(&out).await.unwrap();
            });
        }
    });
    address
}

async fn metastore() -> (Arc<Mutex<State>>, HiveCatalog) {
    let state = Arc::new(Mutex::new(State::default()));
    state.lock().unwrap().tables.insert(
        ("db".into(), "t".into()),
        table(
            "file:/w/db/t",
            "file:/w/db/t/metadata/00000-a.metadata.json",
        ),
    );
    let address = serve(state.clone()).await;
    let options = HiveOptions::from_lake_options(&[
        ("type".into(), "hive".into()),
        ("uri".into(), format!("thrift://{address}")),
    ])
    .unwrap();
    (
        state,
        HiveCatalog::new(&options, Duration::from_secs(5)).unwrap(),
    )
}

#[test]
fn options_name_thrift_metastores_only() {
    let parse = |uri: &str| {
        HiveOptions::from_lake_options(&[
            ("type".into(), "hive".into()),
            ("uri".into(), uri.into()),
        ])
    };
    assert_eq!(
        parse("thrift://a:9083, thrift://b:9084").unwrap().addresses,
        vec!["a:9083", "b:9084"]
    );
    for bad in [
        "http://a:9083",
        "thrift://a",
        "thrift://u@a:1",
        "thrift://a:0",
        "",
    ] {
        assert_eq!(parse(bad).unwrap_err().kind(), ErrorKind::Config, "{bad}");
    }
    let e = HiveOptions::from_lake_options(&[
        ("uri".into(), "thrift://a:1".into()),
        ("hive.metastore.sasl.enabled".into(), "true".into()),
    ])
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.message().contains("Kerberos"), "{e}");
}

async fn pointer(catalog: &HiveCatalog) -> MetadataPointer {
    catalog.table("db", "t").pointer().await.unwrap().unwrap()
}

#[tokio::test]
async fn the_pointer_is_read_and_swapped_with_every_other_field_kept() {
    let (state, catalog) = metastore().await;
    let p = pointer(&catalog).await;
    assert_eq!(p.location, "file:/w/db/t");
    assert_eq!(p.metadata_file(), "metadata/00000-a.metadata.json");
    assert!(
        catalog
            .table("db", "nope")
            .pointer()
            .await
            .unwrap()
            .is_none()
    );

    let before = state.lock().unwrap().tables[&("db".into(), "t".into())].clone();
    let entry = catalog.get_entry("db", "t").await.unwrap().unwrap();
    catalog
        .update_entry(
            "db",
            "t",
            &entry,
            "file:/w/db/t/metadata/00001-b.metadata.json",
        )
        .await
        .unwrap();
    let after = state.lock().unwrap().tables[&("db".into(), "t".into())].clone();
    let params: BTreeMap<&str, &str> = after.string_map(9).into_iter().collect();
    assert_eq!(
        params["metadata_location"],
        "file:/w/db/t/metadata/00001-b.metadata.json"
    );
    assert_eq!(
        params["previous_metadata_location"],
        "file:/w/db/t/metadata/00000-a.metadata.json"
    );
    assert_eq!(params["EXTERNAL"], "TRUE");
    // Every other field as it was, the unknown one included.
    let strip = |s: &Struct| Struct {
        fields: s.fields.iter().filter(|(i, _)| *i != 9).cloned().collect(),
    };
    assert_eq!(strip(&after), strip(&before));

    // The same entry again: the metastore's condition refuses it, a lost race.
    let e = catalog
        .update_entry(
            "db",
            "t",
            &entry,
            "file:/w/db/t/metadata/00001-c.metadata.json",
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
}

#[tokio::test]
async fn a_swap_checks_and_updates_under_the_metastores_lock() {
    let (state, catalog) = metastore().await;
    state.lock().unwrap().waits = 2;
    let id = catalog.lock("db", "t").await.unwrap();
    let entry = catalog.get_entry("db", "t").await.unwrap().unwrap();
    catalog
        .update_entry(
            "db",
            "t",
            &entry,
            "file:/w/db/t/metadata/00001-b.metadata.json",
        )
        .await
        .unwrap();
    catalog.unlock(id).await;
    let s = state.lock().unwrap();
    assert_eq!(
        s.calls,
        [
            "lock",
            "check_lock",
            "check_lock",
            "get_table_req",
            "alter_table_with_environment_context",
            "unlock"
        ]
    );
    assert!(s.held.is_empty(), "released: {:?}", s.held);
}

#[tokio::test]
async fn a_lock_never_granted_ends_within_the_deadline_and_is_released() {
    let (state, catalog) = metastore().await;
    state.lock().unwrap().waits = usize::MAX;
    let options = HiveOptions::from_lake_options(&[
        ("type".into(), "hive".into()),
        ("uri".into(), catalog.endpoint().to_string()),
    ])
    .unwrap();
    let impatient = HiveCatalog::new(&options, Duration::from_millis(400)).unwrap();
    let e = impatient.lock("db", "t").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("not granted"), "{e}");
    assert!(state.lock().unwrap().held.is_empty(), "released");
}

#[tokio::test]
async fn unknown_outcomes_are_reported_as_such() {
    for (mode, kind) in [
        (Mode::ApplyAndDrop, ErrorKind::CommitUnknown),
        (Mode::Garbage, ErrorKind::CommitUnknown),
        (Mode::MetaError, ErrorKind::CommitUnknown),
    ] {
        let (state, catalog) = metastore().await;
        let entry = catalog.get_entry("db", "t").await.unwrap().unwrap();
        state.lock().unwrap().mode = Some(mode);
        let e = catalog
            .update_entry(
                "db",
                "t",
                &entry,
                "file:/w/db/t/metadata/00001-b.metadata.json",
            )
            .await
            .unwrap_err();
        assert_eq!(e.kind(), kind, "{mode:?}: {e}");
    }
}

#[tokio::test]
async fn an_unreachable_metastore_is_unavailable_and_never_unknown() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let options = HiveOptions::from_lake_options(&[
        ("type".into(), "hive".into()),
        ("uri".into(), format!("thrift://{address}")),
    ])
    .unwrap();
    let catalog = HiveCatalog::new(&options, Duration::from_secs(5)).unwrap();
    let e = catalog.table("db", "t").pointer().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
}

#[tokio::test]
async fn a_silent_metastore_ends_within_the_deadline() {
    // Accepts and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let options = HiveOptions::from_lake_options(&[
        ("type".into(), "hive".into()),
        ("uri".into(), format!("thrift://{address}")),
    ])
    .unwrap();
    let catalog = HiveCatalog::new(&options, Duration::from_millis(300)).unwrap();
    let started = std::time::Instant::now();
    let e = catalog.table("db", "t").pointer().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_table_that_is_not_iceberg_or_points_elsewhere_is_refused() {
    let (state, catalog) = metastore().await;
    {
        let mut s = state.lock().unwrap();
        let t = s.tables.get_mut(&("db".into(), "t".into())).unwrap();
        t.set_in_string_map(9, "table_type", "PAIMON");
    }
    let e = catalog.table("db", "t").pointer().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    {
        let mut s = state.lock().unwrap();
        let t = s.tables.get_mut(&("db".into(), "t".into())).unwrap();
        t.set_in_string_map(9, "table_type", "ICEBERG");
        t.set_in_string_map(
            9,
            "metadata_location",
            "file:/elsewhere/metadata/00000-a.metadata.json",
        );
    }
    let e = catalog.table("db", "t").pointer().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("storage descriptor"), "{e}");
}

#[tokio::test]
async fn work_under_the_lock_runs_between_lock_and_unlock_and_a_dropped_one_releases_it() {
    let (state, catalog) = metastore().await;
    let s = state.clone();
    let seen = catalog
        .locked("db", "t", async move { s.lock().unwrap().held.len() })
        .await
        .unwrap();
    assert_eq!(seen, 1, "the lock is held while the work runs");
    assert!(state.lock().unwrap().held.is_empty(), "released after it");

    // The work is dropped (a round cancelled) while it holds the lock.
    let pending = catalog.locked("db", "t", std::future::pending::<()>());
    let _ = tokio::time::timeout(Duration::from_millis(300), pending).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !state.lock().unwrap().held.is_empty() {
        assert!(std::time::Instant::now() < deadline, "never released");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn paimon_registrations_give_the_location_and_refuse_metastore_partitions() {
    let (state, catalog) = metastore().await;
    // An Iceberg table is not a Paimon one.
    let e = catalog.paimon_table("db", "t").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    assert!(e.message().contains("not a Paimon table"), "{e}");
    {
        let mut s = state.lock().unwrap();
        let t = s.tables.get_mut(&("db".into(), "t".into())).unwrap();
        t.set_in_string_map(9, "table_type", "PAIMON");
    }
    assert_eq!(
        catalog
            .paimon_table("db", "t")
            .await
            .unwrap()
            .unwrap()
            .location,
        "file:/w/db/t"
    );
    assert!(catalog.paimon_table("db", "nope").await.unwrap().is_none());
    {
        let mut s = state.lock().unwrap();
        let t = s.tables.get_mut(&("db".into(), "t".into())).unwrap();
        t.set_in_string_map(9, "metastore.partitioned-table", "true");
    }
    let e = catalog.paimon_table("db", "t").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.message().contains("metastore.partitioned-table"), "{e}");
}
