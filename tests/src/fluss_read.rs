//! What Fluss itself holds, read with fluss-rs independently of the host: the reference a
//! lake table is checked against. A log table's rows by their place in the log
//! ([`log_rows`]), which is what "the lake holds the log row for row" compares with (writer
//! retries can duplicate a business row in Fluss, so the rows written are not the reference);
//! a primary-key table's rows as Fluss's lookups answer them ([`fluss_state`]).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::time::Duration;

use fluss::client::{EARLIEST_OFFSET, FlussConnection};
use fluss::metadata::TablePath;
use fluss::row::GenericRow;
use serde_json::Value;

use crate::data;

/// A row's place in a Fluss log: the partition's name (`None` in a table without partitions;
/// values joined by `$` for several partition keys), the bucket, the offset.
pub type LogPos = (Option<String>, i32, i64);

/// Every row of log table `path`, from each bucket's log start up to its end when called (the
/// high watermark of every bucket of every partition), by its place in the log, in the
/// readers' canonical JSON ([`data::canonical_rows`], every column of the Fluss table).
///
/// Read with fluss-rs's record-batch log scanner, every bucket subscribed at the earliest
/// offset. Fluss not answering (a bucket without a leader) is waited out. Panics when the rows
/// are not all read within `timeout` (naming the buckets short of their end), when a bucket's
/// offsets skip or repeat, or when a partition is dropped while it is read. Buckets empty when
/// called are left out.
pub async fn log_rows(
    conn: &FlussConnection,
    path: &TablePath,
    timeout: Duration,
) -> BTreeMap<LogPos, Value> {
    let deadline = tokio::time::Instant::now() + timeout;
    let admin = conn.get_admin().unwrap();
    // Asked again while a bucket has no leader (its tablet server died, and the coordinator
    // has not noticed yet).
    let ends = by(deadline, path, "the log end offsets", async {
        let mut said = false;
        loop {
            match data::try_all_log_end_offsets(&admin, path).await {
                Ok(ends) => break ends,
                Err(e) if !said => {
                    eprintln!("{path}: log end offsets not answered ({e}); asking again");
                    said = true;
                }
                Err(_) => {}
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
    .await;
    let info = by(deadline, path, "the table info", admin.get_table_info(path))
        .await
        .unwrap();
    let names: HashMap<i64, String> = if info.is_partitioned() {
        by(
            deadline,
            path,
            "the partition list",
            admin.list_partition_infos(path),
        )
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.get_partition_id(), p.get_partition_name()))
        .collect()
    } else {
        HashMap::new()
    };
    let name = |partition: Option<i64>| {
        partition.map(|id| {
            names
                .get(&id)
                .unwrap_or_else(|| panic!("partition {id} of {path} was dropped while read"))
                .clone()
        })
    };

    // (partition id, bucket) -> (the offset the next row must have, once known; the end).
    let mut pending: HashMap<(Option<i64>, i32), (Option<i64>, i64)> = ends
        .iter()
        .filter(|(_, end)| **end > 0)
        .map(|(key, end)| (*key, (None, *end)))
        .collect();
    let table = by(deadline, path, "the table's metadata", conn.get_table(path))
        .await
        .unwrap();
    let scanner = table.new_scan().create_record_batch_log_scanner().unwrap();
    let mut plain = HashMap::new();
    let mut partitioned = HashMap::new();
    for (partition, bucket) in pending.keys() {
        match partition {
            Some(id) => partitioned.insert((*id, *bucket), EARLIEST_OFFSET),
            None => plain.insert(*bucket, EARLIEST_OFFSET),
        };
    }
    let subscribed = async {
        if !plain.is_empty() {
            scanner.subscribe_buckets(&plain).await.unwrap();
        }
        if !partitioned.is_empty() {
            scanner
                .subscribe_partition_buckets(&partitioned)
                .await
                .unwrap();
        }
    };
    by(deadline, path, "subscribing the buckets", subscribed).await;

    let mut rows = BTreeMap::new();
    let mut last_error = None;
    while !pending.is_empty() {
        let short = |pending: &HashMap<_, _>, last_error: &Option<String>| {
            panic!(
                "{path}: the log was not read whole within {timeout:?}; (partition id, bucket) \
                 -> (next offset, end) short of their end: {pending:?}; last poll error: \
                 {last_error:?}"
            )
        };
        if tokio::time::Instant::now() >= deadline {
            short(&pending, &last_error);
        }
        let polled = tokio::time::timeout_at(deadline, scanner.poll(Duration::from_secs(1))).await;
        let batches = match polled {
            Err(_) => short(&pending, &last_error),
            Ok(Ok(batches)) => batches,
            // A leader moving (a tablet server restarted) fails a poll; the next one asks
            // the new leader.
            Ok(Err(e)) => {
                last_error = Some(e.to_string());
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        for batch in batches {
            let key = (batch.bucket().partition_id(), batch.bucket().bucket_id());
            let Some((next, end)) = pending.get_mut(&key) else {
                continue; // a bucket already read to its end
            };
            let base = batch.base_offset();
            if let Some(next) = next {
                assert_eq!(
                    base, *next,
                    "{path} partition {:?} bucket {}: a batch at offset {base} where the log \
                     goes on at {next}",
                    key.0, key.1
                );
            }
            let partition = name(key.0);
            for (i, row) in data::canonical_rows(batch.batch()).into_iter().enumerate() {
                let offset = base + i as i64;
                if offset < *end {
                    rows.insert((partition.clone(), key.1, offset), row);
                }
            }
            let after = base + batch.num_records() as i64;
            if after >= *end {
                pending.remove(&key);
            } else {
                *next = Some(after);
            }
        }
    }
    rows
}

/// `ask`'s answer, or a panic naming `what` once `deadline` has passed: an ask sent to a server
/// that died may never be answered.
async fn by<T>(
    deadline: tokio::time::Instant,
    path: &TablePath,
    what: &str,
    ask: impl std::future::Future<Output = T>,
) -> T {
    match tokio::time::timeout_at(deadline, ask).await {
        Ok(answer) => answer,
        Err(_) => panic!("{path}: {what} was not answered in time"),
    }
}

/// The `id` column of [`log_rows`]' rows, by their place in the log.
pub fn log_ids(rows: &BTreeMap<LogPos, Value>) -> BTreeMap<LogPos, i64> {
    rows.iter()
        .map(|(pos, row)| {
            let id = row["id"]
                .as_i64()
                .unwrap_or_else(|| panic!("row at {pos:?} has no integer id: {row}"));
            (pos.clone(), id)
        })
        .collect()
}

/// A lake table's rows (as the lake readers give them, system columns included) by their place
/// in the Fluss log (`__bucket`, `__offset`, the partition name made of the `partition_keys`
/// columns' values), system columns stripped: comparable with [`log_rows`]. Panics on a row
/// without `__bucket`/`__offset` and on two rows at one place (a row tiered twice).
pub fn lake_rows_by_pos(rows: &[Value], partition_keys: &[&str]) -> BTreeMap<LogPos, Value> {
    let mut out = BTreeMap::new();
    for row in rows {
        let field = |name: &str| {
            row.get(name)
                .and_then(Value::as_i64)
                .unwrap_or_else(|| panic!("lake row without {name}: {row}"))
        };
        let partition = (!partition_keys.is_empty()).then(|| {
            partition_keys
                .iter()
                .map(|k| match &row[*k] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join("$")
        });
        let pos = (partition, field("__bucket") as i32, field("__offset"));
        let mut business = row.as_object().expect("a lake row is an object").clone();
        business.retain(|k, _| !k.starts_with("__"));
        if let Some(before) = out.insert(pos.clone(), Value::Object(business)) {
            panic!("two lake rows at {pos:?} (tiered twice): {before} and {row}");
        }
    }
    out
}

/// The rows of primary-key table `path` (primary key: one INT column) for every key in `keys`,
/// as Fluss's lookup answers them, in the readers' canonical JSON ([`data::canonical_rows`]);
/// keys Fluss does not hold are left out. The lookups are sent at once (a lookuper each: one
/// waits for its answer), so that Fluss's lookup client batches them instead of waiting its
/// linger for each.
pub async fn fluss_state(conn: &FlussConnection, path: &TablePath, keys: Range<i32>) -> Vec<Value> {
    let table = conn.get_table(path).await.unwrap();
    let lookups = keys.map(|id| {
        let mut lookuper = table.new_lookup().unwrap().create_lookuper().unwrap();
        async move {
            let mut key = GenericRow::new(1);
            key.set_field(0, id);
            let found = lookuper.lookup(&key).await.unwrap();
            data::canonical_rows(&found.to_record_batch().unwrap())
        }
    });
    futures::future::join_all(lookups)
        .await
        .into_iter()
        .flatten()
        .collect()
}
