//! The Hive Metastore as Apache Iceberg's `HiveCatalog` uses it (`datalake.iceberg.type=hive`):
//! a metastore keeping, for each table, the location of its current metadata file in the
//! table's parameters ([`super::pointer`] checks and swaps it; this module speaks to the
//! metastore).
//!
//! Calls are Thrift's binary protocol over a plain TCP connection, unframed, as a metastore
//! serves by default (`metastore.thrift.transport.mode=binary`, no SASL): `get_table` to read
//! the table, and `alter_table_with_environment_context` to point it at a new metadata file,
//! with the environment Java's `HiveTableOperations` sends: `expected_parameter_key` /
//! `expected_parameter_value` (the metastore applies the change only if the table still points
//! at the metadata file the commit was built on, checked in its own transaction: Hive 4's
//! lock-free commit, HIVE-26882) and `DO_NOT_UPDATE_STATS`. The host takes no metastore lock:
//! the conditional update is the lock, and Java writers that take one send the same condition.
//!
//! Every field of the table the metastore answered is sent back as it was, with only
//! `table_type`, `metadata_location` and `previous_metadata_location` set: `alter_table`
//! replaces the whole table, so the answer is kept as a tree of values
//! ([`super::thrift`]), never as a struct that would drop fields it does not know.
//!
//! The metastore is the host's (`uri`, checked like a REST catalog's against the host's and
//! the cluster's options); a plugin names none. Every call has the host's deadline and a
//! bounded answer. An update whose answer is lost (reset connection, deadline, a failure the
//! metastore reports other than the lost condition) has an unknown outcome
//! ([`ErrorKind::CommitUnknown`]), as Java then checks the commit's status too; only a refused
//! condition is a lost race ([`ErrorKind::Conflict`]). Kerberos (SASL) metastores are refused.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::pointer::{
    Entry, METADATA_LOCATION, Metastore, PREVIOUS_METADATA_LOCATION, PointerTable, Record,
    TABLE_TYPE,
};
use super::rest::clean_message;
use super::thrift::{self, DecodeError, MessageType, Struct, Value, ttype};
use crate::error::{Error, ErrorKind, Result};

/// Largest answer read: a table of thousands of columns fits.
pub const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;
/// Longest time spent connecting to one metastore address, within the call's deadline.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Iceberg's `HiveCatalog` class, for `catalog-impl`.
pub const HIVE_CATALOG_IMPL: &str = "org.apache.iceberg.hive.HiveCatalog";
/// The message of the metastore's refusal of a lost condition (`HiveAlterHandler`,
/// `ObjectStore.alterTable`), which Java's `HiveTableOperations` matches too.
const MODIFIED: &str = "The table has been modified";

/// `LockType.EXCLUSIVE`, `LockLevel.TABLE`, and the `LockState`s (hive_metastore.thrift).
const LOCK_EXCLUSIVE: i32 = 3;
const LOCK_LEVEL_TABLE: i32 = 2;
const LOCK_ACQUIRED: i32 = 1;
const LOCK_WAITING: i32 = 2;
/// Who holds the host's locks, as the metastore's `SHOW LOCKS` lists them.
const LOCK_USER: &str = "fluss-lake-host";
const LOCK_AGENT: &str = concat!("fluss-lake-host/", env!("CARGO_PKG_VERSION"));

/// This machine's name, for the metastore's lock records.
fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty() && h.len() <= 255)
        .unwrap_or_else(|| "localhost".to_string())
}

/// A metastore lock held by [`HiveCatalog::locked`]: released by a task of its own when
/// dropped before `locked` released it.
struct HeldLock {
    catalog: Option<HiveCatalog>,
    id: i64,
    keepalive: tokio::task::JoinHandle<()>,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        self.keepalive.abort();
        if let Some(catalog) = self.catalog.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let id = self.id;
            runtime.spawn(async move { catalog.unlock(id).await });
        }
    }
}

/// A `LockResponse`'s (lockid, state), from a reply's field 0.
fn lock_response(reply: &Struct) -> Option<(i64, i32)> {
    let response = reply.get(0)?.as_struct()?;
    match (response.get(1)?, response.get(2)?) {
        (Value::I64(id), Value::I32(state)) => Some((*id, *state)),
        _ => None,
    }
}

/// The message of the exception a reply holds, if any.
fn exception_message(reply: &Struct) -> String {
    reply
        .fields
        .iter()
        .filter(|(id, _)| *id > 0)
        .find_map(|(_, v)| v.as_struct().and_then(|e| e.str(1)))
        .map(|m| clean_message(m, 300))
        .unwrap_or_else(|| "(no answer)".to_string())
}

/// `Table` fields (hive_metastore.thrift).
const TABLE_SD: i16 = 7;
const TABLE_PARAMETERS: i16 = 9;
/// `StorageDescriptor.location`.
const SD_LOCATION: i16 = 2;

/// The options of a Hive Metastore: where it listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiveOptions {
    /// `uri` as given (`thrift://host:port[,thrift://host:port...]`), for the check that it is
    /// the host's or the cluster's and for messages.
    pub uri: String,
    /// `host:port` of each, tried in order as Java's `HiveMetaStoreClient` does.
    pub addresses: Vec<String>,
    /// Paimon's `lock.enabled`, if given: whether its writers take the metastore's table lock
    /// around a commit (Paimon's default: on object stores only).
    pub lock_enabled: Option<bool>,
}

fn get<'a>(options: &'a [(String, String)], key: &str) -> Option<&'a str> {
    options
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.trim())
}

/// Whether Iceberg options name a Hive catalog (`type=hive`, or its `catalog-impl`).
pub fn is_hive(options: &[(String, String)]) -> bool {
    get(options, "type").is_some_and(|t| t.eq_ignore_ascii_case("hive"))
        || get(options, "catalog-impl") == Some(HIVE_CATALOG_IMPL)
}

impl HiveOptions {
    /// Reads `uri` and refuses what the host does not speak (SASL / Kerberos).
    pub fn from_lake_options(options: &[(String, String)]) -> Result<HiveOptions> {
        let config = |m: String| Error::new(ErrorKind::Config, m);
        for key in [
            "hive.metastore.sasl.enabled",
            "hadoop.hive.metastore.sasl.enabled",
            "metastore.sasl.enabled",
        ] {
            if get(options, key).is_some_and(|v| v.eq_ignore_ascii_case("true")) {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "{key}=true: Kerberos (SASL) Hive Metastores are not supported; the host speaks the metastore's plain binary protocol"
                    ),
                ));
            }
        }
        let uri = get(options, "uri").filter(|u| !u.is_empty()).ok_or_else(|| {
            config(
                "type=hive needs 'uri' (thrift://host:port of the Hive Metastore; the host reads no hive-site.xml)"
                    .into(),
            )
        })?;
        let mut addresses = Vec::new();
        for one in uri.split(',').map(str::trim).filter(|u| !u.is_empty()) {
            let address = one
                .strip_prefix("thrift://")
                .map(|a| a.trim_end_matches('/'))
                .filter(|a| {
                    a.rsplit_once(':').is_some_and(|(h, p)| {
                        !h.is_empty()
                            && !h.contains(['/', '@', '?', '#'])
                            && p.parse::<u16>().is_ok_and(|p| p != 0)
                    })
                })
                .ok_or_else(|| {
                    config(format!(
                        "uri '{}' is not thrift://host:port",
                        clean_message(one, 200)
                    ))
                })?;
            addresses.push(address.to_string());
        }
        if addresses.is_empty() || addresses.len() > 16 {
            return Err(config(format!(
                "uri '{}' must name 1 to 16 metastores",
                clean_message(uri, 200)
            )));
        }
        Ok(HiveOptions {
            uri: uri.to_string(),
            addresses,
            lock_enabled: None,
        })
    }

    /// The options of Paimon's `HiveCatalog` (`metastore=hive`): `uri`, and `lock.enabled`.
    pub fn for_paimon(options: &[(String, String)]) -> Result<HiveOptions> {
        let mut o = Self::from_lake_options(options).map_err(|e| {
            Error::new(
                e.kind(),
                e.message()
                    .replace("type=hive needs", "metastore=hive needs"),
            )
        })?;
        o.lock_enabled = match get(options, "lock.enabled") {
            None | Some("") => None,
            Some(v) if v.eq_ignore_ascii_case("true") => Some(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Some(false),
            Some(v) => {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "lock.enabled='{}' is not true or false",
                        clean_message(v, 40)
                    ),
                ));
            }
        };
        Ok(o)
    }
}

/// A Paimon table as the metastore registers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaimonRegistration {
    /// The table's location (its storage descriptor's, or the `path` parameter Paimon's
    /// `location-in-properties` sets).
    pub location: String,
}

/// A client of one Hive Metastore (its addresses and the host's deadline); a cheap clone.
/// A connection serves one call: tiering calls a metastore a few times per round.
#[derive(Clone)]
pub struct HiveCatalog {
    inner: Arc<Inner>,
}

struct Inner {
    options: HiveOptions,
    deadline: Duration,
    seq_id: AtomicI32,
}

impl fmt::Debug for HiveCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HiveCatalog")
            .field("uri", &self.inner.options.uri)
            .finish_non_exhaustive()
    }
}

/// How a call ended without a usable answer, and whether the request may have been applied.
enum Failure {
    /// Never sent: no address accepted a connection.
    Unreachable(String),
    /// Sent, and no (whole) answer came back.
    Lost(String),
    /// The answer is not a Thrift reply to the call.
    Garbled(String),
    /// The metastore does not serve the method (an older or newer Hive).
    UnknownMethod(String),
}

/// `TApplicationException.type` of a method the server does not serve.
const UNKNOWN_METHOD: i32 = 1;

impl HiveCatalog {
    /// A client of the metastore `options` name; every call ends within `deadline`.
    pub fn new(options: &HiveOptions, deadline: Duration) -> Result<HiveCatalog> {
        if deadline.is_zero() {
            return Err(Error::new(
                ErrorKind::Internal,
                "the Hive Metastore deadline is zero",
            ));
        }
        Ok(HiveCatalog {
            inner: Arc::new(Inner {
                options: options.clone(),
                deadline,
                seq_id: AtomicI32::new(1),
            }),
        })
    }

    /// The table `database.table`.
    pub fn table(&self, database: &str, table: &str) -> PointerTable {
        PointerTable::new(Metastore::Hive(self.clone()), database, table)
    }

    /// The metastore's `uri` (for messages: it holds no secret).
    pub fn endpoint(&self) -> &str {
        &self.inner.options.uri
    }

    /// Sends `method(args)` and returns the reply's struct (field 0: the result; 1..: the
    /// exceptions the method declares).
    async fn call(&self, method: &str, args: &Struct) -> std::result::Result<Struct, Failure> {
        let seq_id = self.inner.seq_id.fetch_add(1, Ordering::Relaxed);
        let mut request = Vec::new();
        thrift::write_message(&mut request, method, MessageType::Call, seq_id, args);
        let sent = std::sync::atomic::AtomicBool::new(false);
        let exchange = async {
            let mut last = String::new();
            let mut stream = None;
            for address in &self.inner.options.addresses {
                let connect = TcpStream::connect(address.as_str());
                match tokio::time::timeout(self.inner.deadline.min(CONNECT_TIMEOUT), connect).await
                {
                    Ok(Ok(s)) => {
                        stream = Some(s);
                        break;
                    }
                    Ok(Err(e)) => last = format!("{address}: {e}"),
                    Err(_) => last = format!("{address}: no connection within {CONNECT_TIMEOUT:?}"),
                }
            }
            let Some(mut stream) = stream else {
                return Err(Failure::Unreachable(last));
            };
            let _ = stream.set_nodelay(true);
            sent.store(true, Ordering::SeqCst);
            stream
                .write_all(&request)
                .await
                .map_err(|e| Failure::Lost(format!("sending the {method} call: {e}")))?;
            let mut answer = Vec::with_capacity(4096);
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                match thrift::read_message(&answer) {
                    Ok((head, body)) => {
                        if head.name != method || head.seq_id != seq_id {
                            return Err(Failure::Garbled(format!(
                                "it answered '{}' #{} to '{method}' #{seq_id}",
                                clean_message(&head.name, 60),
                                head.seq_id
                            )));
                        }
                        if head.kind == MessageType::Exception as u8 {
                            if body.get(2) == Some(&Value::I32(UNKNOWN_METHOD)) {
                                return Err(Failure::UnknownMethod(format!(
                                    "it does not serve {method}"
                                )));
                            }
                            return Err(Failure::Garbled(format!(
                                "it failed the {method} call: {}",
                                clean_message(body.str(1).unwrap_or("(no message)"), 300)
                            )));
                        }
                        if head.kind != MessageType::Reply as u8 {
                            return Err(Failure::Garbled(format!(
                                "its answer to {method} is not a reply (message type {})",
                                head.kind
                            )));
                        }
                        return Ok(body);
                    }
                    Err(DecodeError::Invalid(why)) => {
                        return Err(Failure::Garbled(format!(
                            "its answer to {method} is not Thrift: {why}"
                        )));
                    }
                    Err(DecodeError::Incomplete) => {}
                }
                if answer.len() >= MAX_ANSWER_BYTES {
                    return Err(Failure::Garbled(format!(
                        "its answer to {method} is larger than {MAX_ANSWER_BYTES} bytes"
                    )));
                }
                let want = chunk.len().min(MAX_ANSWER_BYTES - answer.len());
                let n = stream
                    .read(&mut chunk[..want])
                    .await
                    .map_err(|e| Failure::Lost(format!("reading the {method} answer: {e}")))?;
                if n == 0 {
                    return Err(Failure::Lost(format!(
                        "it closed the connection before answering {method}"
                    )));
                }
                answer.extend_from_slice(&chunk[..n]);
            }
        };
        match tokio::time::timeout(self.inner.deadline, exchange).await {
            Ok(r) => r,
            Err(_) if sent.load(Ordering::SeqCst) => Err(Failure::Lost(format!(
                "no answer to {method} within {}",
                humantime::format_duration(self.inner.deadline)
            ))),
            Err(_) => Err(Failure::Unreachable(format!(
                "no connection within {}",
                humantime::format_duration(self.inner.deadline)
            ))),
        }
    }

    /// The error of a read (nothing was changed whatever happened).
    fn read_error(&self, failure: Failure) -> Error {
        let uri = self.endpoint();
        match failure {
            Failure::Unreachable(why) => Error::new(
                ErrorKind::Unavailable,
                format!("cannot connect to Hive Metastore {uri}: {why}"),
            ),
            Failure::Lost(why) => Error::new(
                ErrorKind::Unavailable,
                format!("Hive Metastore {uri}: {why}"),
            ),
            Failure::Garbled(why) | Failure::UnknownMethod(why) => {
                Error::new(ErrorKind::Protocol, format!("Hive Metastore {uri}: {why}"))
            }
        }
    }

    /// `get_table_req` (Hive 3 and later; Hive 4 serves no `get_table`), else `get_table`
    /// (Hive 2): the table's record; `None` when the metastore has no such table (or
    /// database).
    pub(crate) async fn get_entry(&self, database: &str, table: &str) -> Result<Option<Entry>> {
        let request = Struct::new()
            .with(1, Value::string(database))
            .with(2, Value::string(table));
        let reply = match self
            .call(
                "get_table_req",
                &Struct::new().with(1, Value::Struct(request.clone())),
            )
            .await
        {
            // GetTableResult.table
            Ok(mut reply) => {
                if let Some(Value::Struct(result)) = reply.get(0) {
                    let table = result.get(1).cloned();
                    reply.fields.retain(|(id, _)| *id != 0);
                    if let Some(table) = table {
                        reply.fields.push((0, table));
                    }
                }
                reply
            }
            Err(Failure::UnknownMethod(_)) => self
                .call("get_table", &request)
                .await
                .map_err(|f| self.read_error(f))?,
            Err(f) => return Err(self.read_error(f)),
        };
        if reply.get(2).is_some() {
            // NoSuchObjectException
            return Ok(None);
        }
        if let Some(e) = reply.get(1).and_then(Value::as_struct) {
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!(
                    "Hive Metastore {}: get_table {database}.{table} failed: {}",
                    self.endpoint(),
                    clean_message(e.str(1).unwrap_or("MetaException"), 300)
                ),
            ));
        }
        let Some(Value::Struct(record)) = reply.get(0) else {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "Hive Metastore {}: its get_table answer holds no table",
                    self.endpoint()
                ),
            ));
        };
        let parameter = |key: &str| {
            record
                .string_map(TABLE_PARAMETERS)
                .into_iter()
                .rev()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        };
        Ok(Some(Entry {
            table_type: parameter(TABLE_TYPE),
            metadata_location: parameter(METADATA_LOCATION),
            storage_location: record
                .get(TABLE_SD)
                .and_then(Value::as_struct)
                .and_then(|sd| sd.str(SD_LOCATION))
                .map(str::to_string),
            record: Record::Hive(record.clone()),
        }))
    }

    /// Takes the metastore's exclusive lock of the table, as Java's `HiveTableOperations` does
    /// around its commits (`MetastoreLock`, `iceberg.engine.hive.lock-enabled`, Iceberg's
    /// default): such writers alter the table unconditionally under it, so a commit that did
    /// not take it could be overwritten. Waits (`check_lock`, backing off up to 2 s) until it is
    /// granted or the deadline passes; a lock not granted is released and `Unavailable`
    /// (nothing was changed). Returns the lock's id for [`HiveCatalog::unlock`].
    pub(crate) async fn lock(&self, database: &str, table: &str) -> Result<i64> {
        let uri = self.endpoint();
        let component = Struct::new()
            .with(1, Value::I32(LOCK_EXCLUSIVE))
            .with(2, Value::I32(LOCK_LEVEL_TABLE))
            .with(3, Value::string(database))
            .with(4, Value::string(table));
        let request = Struct::new()
            .with(
                1,
                Value::List {
                    element: ttype::STRUCT,
                    items: vec![Value::Struct(component)],
                },
            )
            .with(3, Value::string(LOCK_USER))
            .with(4, Value::string(&host_name()))
            .with(5, Value::string(LOCK_AGENT));
        let started = std::time::Instant::now();
        let reply = self
            .call("lock", &Struct::new().with(1, Value::Struct(request)))
            .await
            .map_err(|f| self.read_error(f))?;
        let (mut id, mut state) = lock_response(&reply).ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                format!(
                    "Hive Metastore {uri}: the lock of {database}.{table} was refused: {}",
                    exception_message(&reply)
                ),
            )
        })?;
        let mut wait = Duration::from_millis(50);
        while state == LOCK_WAITING {
            if started.elapsed() + wait >= self.inner.deadline {
                self.unlock(id).await;
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    format!(
                        "Hive Metastore {uri}: the lock of {database}.{table} was not granted within {} (another writer holds it)",
                        humantime::format_duration(self.inner.deadline)
                    ),
                ));
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(2));
            let reply = self
                .call(
                    "check_lock",
                    &Struct::new().with(1, Value::Struct(Struct::new().with(1, Value::I64(id)))),
                )
                .await
                .map_err(|f| self.read_error(f));
            match reply.map(|r| lock_response(&r)) {
                Ok(Some((i, s))) => (id, state) = (i, s),
                Ok(None) | Err(_) => {
                    self.unlock(id).await;
                    return Err(Error::new(
                        ErrorKind::Unavailable,
                        format!(
                            "Hive Metastore {uri}: checking the lock of {database}.{table} failed"
                        ),
                    ));
                }
            }
        }
        if state != LOCK_ACQUIRED {
            self.unlock(id).await;
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!(
                    "Hive Metastore {uri}: the lock of {database}.{table} ended in state {state}, not acquired"
                ),
            ));
        }
        Ok(id)
    }

    /// Releases lock `id`. A failure is logged, not returned: the commit it guarded has its
    /// outcome already, and the metastore expires the lock (`hive.txn.timeout`).
    pub(crate) async fn unlock(&self, id: i64) {
        let request = Struct::new().with(1, Value::Struct(Struct::new().with(1, Value::I64(id))));
        match self.call("unlock", &request).await {
            Ok(reply) if reply.get(1).is_none() && reply.get(2).is_none() => {}
            Ok(reply) => tracing::warn!(
                metastore = %self.endpoint(),
                lock = id,
                "the metastore refused to release a lock: {}",
                exception_message(&reply)
            ),
            Err(f) => tracing::warn!(
                metastore = %self.endpoint(),
                lock = id,
                "releasing a lock failed; the metastore expires it: {}",
                self.read_error(f)
            ),
        }
    }

    /// Runs `work` under the metastore's exclusive lock of `database.table` ([`HiveCatalog::lock`]),
    /// as Paimon's writers commit when `lock.enabled` (its `HiveCatalogLock`): the lock is kept
    /// alive (`heartbeat` every 60 s, well within the metastore's `hive.txn.timeout`) while
    /// `work` runs, and released after it. `Unavailable` when it is not granted (then `work`
    /// has not run).
    pub async fn locked<T>(
        &self,
        database: &str,
        table: &str,
        work: impl Future<Output = T>,
    ) -> Result<T> {
        let id = self.lock(database, table).await?;
        let catalog = self.clone();
        let keepalive = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            tick.tick().await;
            loop {
                tick.tick().await;
                let request =
                    Struct::new().with(1, Value::Struct(Struct::new().with(1, Value::I64(id))));
                if let Err(f) = catalog.call("heartbeat", &request).await {
                    tracing::warn!(
                        metastore = %catalog.endpoint(),
                        lock = id,
                        "a heartbeat of the metastore lock failed: {}",
                        catalog.read_error(f)
                    );
                }
            }
        });
        // Released however `work` ends: also when it is dropped (a round cancelled), so the
        // metastore's other writers need not wait for the lock to expire.
        let mut held = HeldLock {
            catalog: Some(self.clone()),
            id,
            keepalive,
        };
        let out = work.await;
        held.keepalive.abort();
        if let Some(catalog) = held.catalog.take() {
            catalog.unlock(id).await;
        }
        Ok(out)
    }

    /// The Paimon table `database.table` as the metastore registers it; `None` when it has no
    /// such table. Refused: a table that is not Paimon's (`table_type` parameter), one without a
    /// location, and one whose partitions the metastore keeps (`metastore.partitioned-table`:
    /// each commit would have to add its partitions to the metastore, which the host does not
    /// do yet).
    pub async fn paimon_table(
        &self,
        database: &str,
        table: &str,
    ) -> Result<Option<PaimonRegistration>> {
        let uri = self.endpoint();
        let Some(entry) = self.get_entry(database, table).await? else {
            return Ok(None);
        };
        let Record::Hive(record) = &entry.record else {
            return Err(Error::new(ErrorKind::Internal, "not a Hive record"));
        };
        let table_type = entry.table_type.as_deref().unwrap_or("");
        if !table_type.eq_ignore_ascii_case("PAIMON") {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "Hive Metastore {uri}: table {database}.{table} is not a Paimon table (its table_type parameter is '{}')",
                    clean_message(table_type, 60)
                ),
            ));
        }
        let parameters = record.string_map(TABLE_PARAMETERS);
        let parameter = |key: &str| {
            parameters
                .iter()
                .rev()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
        };
        if parameter("metastore.partitioned-table").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "Hive Metastore {uri}: Paimon table {database}.{table} has metastore.partitioned-table=true: \
                     its partitions are kept in the metastore, which the host does not update yet"
                ),
            ));
        }
        let location = entry
            .storage_location
            .clone()
            .filter(|l| !l.is_empty())
            .or_else(|| parameter("path").map(str::to_string))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "Hive Metastore {uri}: Paimon table {database}.{table} has no location"
                    ),
                )
            })?;
        Ok(Some(PaimonRegistration { location }))
    }

    /// `alter_table_with_environment_context` of `entry`'s table, every field as read, with
    /// the pointer parameters set, under the condition that it still points at `entry`'s
    /// metadata file.
    pub(crate) async fn update_entry(
        &self,
        database: &str,
        table: &str,
        entry: &Entry,
        new_location: &str,
    ) -> Result<()> {
        let uri = self.endpoint();
        let (Record::Hive(record), Some(expected)) = (&entry.record, &entry.metadata_location)
        else {
            return Err(Error::new(
                ErrorKind::Internal,
                "a Hive Metastore update of another metastore's table, or of one without a pointer",
            ));
        };
        let mut record = record.clone();
        record.set_in_string_map(TABLE_PARAMETERS, TABLE_TYPE, "ICEBERG");
        record.set_in_string_map(TABLE_PARAMETERS, METADATA_LOCATION, new_location);
        record.set_in_string_map(TABLE_PARAMETERS, PREVIOUS_METADATA_LOCATION, expected);
        let environment = Struct::new().with(
            1,
            Value::Map {
                key: ttype::STRING,
                value: ttype::STRING,
                entries: vec![
                    (
                        Value::string("expected_parameter_key"),
                        Value::string(METADATA_LOCATION),
                    ),
                    (
                        Value::string("expected_parameter_value"),
                        Value::string(expected),
                    ),
                    (Value::string("DO_NOT_UPDATE_STATS"), Value::string("true")),
                ],
            },
        );
        let args = Struct::new()
            .with(1, Value::string(database))
            .with(2, Value::string(table))
            .with(3, Value::Struct(record))
            .with(4, Value::Struct(environment));
        let reply = match self
            .call("alter_table_with_environment_context", &args)
            .await
        {
            Ok(reply) => reply,
            Err(Failure::Unreachable(why)) => {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    format!("cannot connect to Hive Metastore {uri}: {why}"),
                ));
            }
            Err(Failure::Lost(why) | Failure::Garbled(why) | Failure::UnknownMethod(why)) => {
                return Err(Error::new(
                    ErrorKind::CommitUnknown,
                    format!(
                        "Hive Metastore {uri}: the update of {database}.{table} may or may not have been applied: {why}"
                    ),
                ));
            }
        };
        // 1: InvalidOperationException, 2: MetaException.
        let Some((id, exception)) = [1, 2]
            .into_iter()
            .find_map(|id| reply.get(id).and_then(Value::as_struct).map(|e| (id, e)))
        else {
            return Ok(());
        };
        let message = clean_message(exception.str(1).unwrap_or(""), 400);
        if message.contains(MODIFIED) {
            return Err(Error::new(
                ErrorKind::Conflict,
                format!(
                    "Hive Metastore {uri}: table {database}.{table} no longer points at {expected}: another writer committed ({message})"
                ),
            ));
        }
        if id == 1 {
            // Refused by the metastore's checks before it changed anything.
            return Err(Error::new(
                ErrorKind::Config,
                format!("Hive Metastore {uri} refused the update of {database}.{table}: {message}"),
            ));
        }
        Err(Error::new(
            ErrorKind::CommitUnknown,
            format!(
                "Hive Metastore {uri}: the update of {database}.{table} failed and may or may not have been applied: {message}"
            ),
        ))
    }
}
