//! The commit kit: the one place where a format's commit is retried, recognised and cleaned
//! up, so that a format author writes format logic only.
//!
//! Every lake format commits the same way: read the newest version (the *base*), check that
//! the commit still applies to it, write the files of an attempt, and publish one final object
//! with put-if-absent (Paimon `snapshot/snapshot-N`, Iceberg `metadata/vN.metadata.json`,
//! Lance `_versions/N.manifest`, Delta `_delta_log/N.json`). What goes wrong is shared too,
//! and decided here once ([`commit`]):
//!
//! * **A lost race** (a rival published that version first) is the only thing retried, on a
//!   new base, at most [`RetryPolicy::max_attempts`] times. It is not an error: publishing
//!   answers [`Published::Theirs`].
//! * **A refused check** ([`Attempt::check`], e.g. "another tiering round committed after the
//!   snapshot this round planned from") and any other error of an attempt end the commit:
//!   errors of an attempt are final by type, whatever their kind, so no format can retry a
//!   refusal by accident.
//! * **An unknown outcome**: the store failed or timed out on the final put, or answered
//!   "already exists" to a retried request that had landed. The object at the path is read
//!   back: the attempt's own bytes mean it was published ([`Published::Ours`]; every final
//!   object names files unique to its attempt, so no rival writes the same bytes), a rival's
//!   bytes mean the race was lost, and when that cannot be told the commit fails with
//!   [`UNKNOWN_OUTCOME`] in its message and **nothing is deleted**: a file a published
//!   snapshot references must never go, and an orphan only costs space (Java Paimon and
//!   Iceberg do the same with `CommitStateUnknownException`).
//! * **Cleanup**: files are registered in a [`Written`] as they are written and deleted only
//!   when the commit provably did not publish them: an attempt's own files after a lost race,
//!   every file after a refusal, an error before the final put, or too many lost races.
//!
//! A table kept by a catalog publishes through it instead of with one final put
//! ([`Plan::Commit`]: an Iceberg REST catalog applies a list of updates; [`Plan::Swap`]: a
//! metastore that keeps the location of the current metadata file, as Iceberg's Glue, Hive
//! and JDBC catalogs do, swaps it to a new file the attempt wrote under a name of its own).
//! A table whose catalog keeps its versions (Paimon's REST catalog) has the catalog commit the
//! version the attempt built ([`Plan::Version`]): the catalog answers a lost race itself.
//! The catalog's compare-and-swap decides a race as put-if-absent does, and the same four
//! outcomes are told apart the same way ([`publish_to_catalog`], [`publish_by_swap`],
//! [`publish_version`]).

use crate::error::{Error, ErrorKind, Result};
use crate::storage::Storage;
use crate::table_catalog::{TableCatalog, TableState};

/// Words every error of a commit whose outcome is unknown carries, for logs and tests.
pub const UNKNOWN_OUTCOME: &str = "commit outcome unknown";

/// How often a commit retries a lost race: a table's own `commit.retry.*` option, else the
/// format's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first one included (at least 1).
    pub max_attempts: u32,
}

impl RetryPolicy {
    /// Attempts bounded by `retries` more after the first.
    pub fn retries(retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts: retries.saturating_add(1),
        }
    }

    /// The policy of a table whose option `key` (a number of retries after the first attempt,
    /// as Paimon's `commit.max-retries` and Iceberg's `commit.retry.num-retries` count them)
    /// is looked up in `sources` in order, else `default_retries`. A value that is not a
    /// non-negative integer is `invalid-input`, naming the option.
    pub fn from_options<'a>(
        sources: impl IntoIterator<Item = Option<&'a str>>,
        key: &str,
        default_retries: u32,
    ) -> Result<RetryPolicy> {
        match sources.into_iter().flatten().next() {
            None => Ok(RetryPolicy::retries(default_retries)),
            Some(v) => v
                .trim()
                .parse::<u32>()
                .map(RetryPolicy::retries)
                .map_err(|_| {
                    Error::invalid_input(format!(
                        "{key}={v:?} is not a number of commit retries (a non-negative integer)"
                    ))
                }),
        }
    }
}

/// What publishing a final object with put-if-absent found at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// The object is this attempt's: the version is published.
    Ours,
    /// A rival published that version first: this attempt lost the race.
    Theirs,
}

/// How many times [`publish`] repeats a final put whose request failed while the object is
/// still absent (a timeout or a dropped connection that never reached the store).
const PUT_REPEATS: u32 = 3;

/// Publishes `bytes` at `path` unless an object is there, and tells whose object is there
/// afterwards. `bytes` must be unique to the attempt (it names the attempt's own files). An
/// error means the outcome is unknown: the caller must keep every file it wrote.
pub fn publish(storage: &dyn Storage, path: &str, bytes: &[u8]) -> Result<Published> {
    let mut last_failure = None;
    for _ in 0..PUT_REPEATS {
        match storage.put_if_absent(path, bytes) {
            Ok(()) => return Ok(Published::Ours),
            Err(e) => {
                // "Already exists" may answer a retried request of ours that landed, and any
                // other failure may hide a write that landed: the object tells.
                let existed = e.kind() == ErrorKind::AlreadyExists;
                match storage.get_opt(path) {
                    Ok(Some(found)) if found == bytes => return Ok(Published::Ours),
                    Ok(Some(_)) => return Ok(Published::Theirs),
                    // Absent after "already exists": deleted since (an expiry?); absent after a
                    // failure: the write may still be in flight. Putting again is safe either
                    // way: it lands once, and a landed copy is recognised as ours.
                    Ok(None) => {
                        last_failure = Some(if existed {
                            Error::io(format!("{path} existed, then did not"))
                        } else {
                            e
                        })
                    }
                    Err(read) => {
                        return Err(unknown(
                            path,
                            &format!("{e}; reading it back failed too: {read}"),
                        ));
                    }
                }
            }
        }
    }
    let why = last_failure.map_or_else(|| "no answer".to_string(), |e| e.to_string());
    Err(unknown(path, &why))
}

fn unknown(path: &str, why: &str) -> Error {
    Error::io(format!(
        "{UNKNOWN_OUTCOME}: publishing {path} failed ({why}) and whether it was published \
         cannot be told; every file of the commit is kept"
    ))
}

/// Files written for a commit, deleted when it is dropped unless they were [`kept`](Self::keep)
/// (the commit published them, or cannot tell whether it did).
pub struct Written<'s> {
    storage: &'s dyn Storage,
    paths: Vec<String>,
}

impl<'s> Written<'s> {
    /// No files yet.
    pub fn new(storage: &'s dyn Storage) -> Written<'s> {
        Written {
            storage,
            paths: Vec::new(),
        }
    }

    /// Registers `path`, before writing it (a failed write may leave a partial object).
    pub fn add(&mut self, path: impl Into<String>) {
        self.paths.push(path.into());
    }

    /// Registers `path` and writes `data` there.
    pub fn put(&mut self, path: impl Into<String>, data: &[u8]) -> Result<()> {
        let path = path.into();
        self.paths.push(path.clone());
        self.storage
            .put(&path, data)
            .map_err(|e| e.context(format!("writing {path}")))
    }

    /// Keeps every file: none is deleted on drop.
    pub fn keep(mut self) {
        self.paths.clear();
    }

    /// Deletes every file now (best effort: a file left behind is an orphan, never a loss).
    pub fn discard(mut self) {
        self.delete_all();
    }

    fn delete_all(&mut self) {
        for path in self.paths.drain(..) {
            if let Err(e) = self.storage.delete(&path) {
                crate::warn!("could not delete {path} of an unpublished commit: {e}");
            }
        }
    }
}

impl Drop for Written<'_> {
    fn drop(&mut self) {
        self.delete_all();
    }
}

/// The final object an attempt publishes, and what the commit returns if it lands.
pub struct Proposal<T> {
    /// The object's path (the version's file).
    pub path: String,
    /// Its bytes; they must name at least one file unique to the attempt.
    pub bytes: Vec<u8>,
    /// Files the attempt wrote that the published object does not reference (manifests a
    /// merge folded into others): deleted once it is published.
    pub unreferenced: Vec<String>,
    /// The commit's result.
    pub output: T,
}

/// Tells from a state of the table whether a [`CatalogProposal`] was applied.
pub type Recognise = Box<dyn Fn(&TableState) -> Result<bool>>;

/// A change a catalog applies (an Iceberg REST commit) instead of an object the attempt puts:
/// the catalog's compare-and-swap stands in for put-if-absent. Its requirements must make a
/// repeated request land at most once (they hold the base it was built on), so a request
/// whose outcome is unknown is repeated, and one that answers "conflict" after a repeat is
/// recognised by [`recognise`](Self::recognise) as ours or a rival's.
pub struct CatalogProposal<T> {
    /// The requirements (a JSON array) the catalog checks before applying the updates.
    pub requirements: String,
    /// The updates (a JSON array).
    pub updates: String,
    /// Tells from a state of the table whether this proposal was applied (its snapshot is
    /// there): how a lost acknowledgement is told from a lost race.
    pub recognise: Recognise,
    /// Files the attempt wrote that the change does not reference: deleted once applied.
    pub unreferenced: Vec<String>,
    /// The commit's result.
    pub output: T,
}

/// A new metadata file and the swap of the table's pointer to it, for a table a metastore
/// keeps by the location of its current metadata file (the `metadata-pointer` catalog kind).
/// The file is written with put-if-absent under a name unique to the attempt (so no rival ever
/// writes it), then the catalog points the table at it if it still points at
/// [`expected`](Self::expected): that compare-and-swap stands in for put-if-absent. A lost race
/// deletes the file; an unknown outcome keeps it, and a later read of the table tells: a table
/// pointing at the file (or holding what [`recognise`](Self::recognise) looks for) is ours.
pub struct PointerProposal<T> {
    /// The metadata file the attempt's base was read from (relative to the table's location):
    /// the swap happens only while the table still points at it.
    pub expected: String,
    /// The new metadata file (relative to the table's location), unique to the attempt.
    pub path: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Tells from a state of the table whether this proposal was applied, once the pointer may
    /// have moved past [`path`](Self::path) (a rival built on it): only asked after a swap whose
    /// outcome was unknown.
    pub recognise: Recognise,
    /// Files the attempt wrote that the new metadata does not reference: deleted once swapped.
    pub unreferenced: Vec<String>,
    /// The commit's result.
    pub output: T,
}

/// Tells from the table (its files, read through the storage) whether a [`VersionProposal`]
/// was committed.
pub type RecogniseVersion = Box<dyn Fn(&dyn Storage) -> Result<bool>>;

/// A version the table's catalog commits (the [`CatalogKind::Versions`] kind): the catalog
/// checks that no other version took its place and answers a lost race, so its commit stands
/// in for put-if-absent. The version must name files unique to the attempt, so that
/// [`recognise`](Self::recognise) can tell it from a rival's after an answer was lost.
///
/// [`CatalogKind::Versions`]: crate::table_catalog::CatalogKind::Versions
pub struct VersionProposal<T> {
    /// The version's JSON (Paimon: the `Snapshot`).
    pub version: String,
    /// Statistics the catalog keeps beside it (a JSON array; Paimon: `PartitionStatistics`).
    pub statistics: String,
    /// Tells whether this version was committed: only asked after a commit whose outcome was
    /// unknown.
    pub recognise: RecogniseVersion,
    /// Files the attempt wrote that the version does not reference: deleted once committed.
    pub unreferenced: Vec<String>,
    /// The commit's result.
    pub output: T,
}

/// What an attempt does after checking its base.
pub enum Plan<T> {
    /// Publish this.
    Publish(Proposal<T>),
    /// Have the table's catalog apply this ([`crate::table_catalog::current`]).
    Commit(CatalogProposal<T>),
    /// Write a new metadata file and have the table's catalog point the table at it
    /// ([`crate::table_catalog::current`]).
    Swap(PointerProposal<T>),
    /// Have the table's catalog commit this version ([`crate::table_catalog::current`]).
    Version(VersionProposal<T>),
    /// The base changed while the attempt read it (a version vanished under it): try again on
    /// a new base, as after a lost race. The string says what moved, for the log.
    BaseMoved(String),
    /// Publish nothing (the change no longer applies, or there is nothing to change): the
    /// commit ends with this output, and every file it wrote is deleted.
    Done(T),
}

impl<T> Plan<T> {
    /// The same plan with its output mapped.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Plan<U> {
        match self {
            Plan::Publish(p) => Plan::Publish(Proposal {
                path: p.path,
                bytes: p.bytes,
                unreferenced: p.unreferenced,
                output: f(p.output),
            }),
            Plan::Commit(p) => Plan::Commit(CatalogProposal {
                requirements: p.requirements,
                updates: p.updates,
                recognise: p.recognise,
                unreferenced: p.unreferenced,
                output: f(p.output),
            }),
            Plan::Swap(p) => Plan::Swap(PointerProposal {
                expected: p.expected,
                path: p.path,
                bytes: p.bytes,
                recognise: p.recognise,
                unreferenced: p.unreferenced,
                output: f(p.output),
            }),
            Plan::Version(p) => Plan::Version(VersionProposal {
                version: p.version,
                statistics: p.statistics,
                recognise: p.recognise,
                unreferenced: p.unreferenced,
                output: f(p.output),
            }),
            Plan::BaseMoved(why) => Plan::BaseMoved(why),
            Plan::Done(output) => Plan::Done(f(output)),
        }
    }
}

/// One kind of commit of a format (a tiering commit, a compaction, an expiry...). The kit
/// calls, for every attempt, [`read_base`](Self::read_base), then [`check`](Self::check),
/// then [`build`](Self::build), then publishes; the order is the kit's, so no attempt can
/// check a base older than the one it publishes on. Every error is final.
pub trait Attempt {
    /// What an attempt builds on (the newest version and what it holds).
    type Base;
    /// What a published commit returns.
    type Output;

    /// Reads the newest version.
    fn read_base(&mut self, storage: &dyn Storage) -> Result<Self::Base>;

    /// Fails when the commit must not be published on `base` at all (another tiering round
    /// committed after the planned snapshot, a compaction's inputs are gone). Never retried.
    fn check(&mut self, storage: &dyn Storage, base: &Self::Base) -> Result<()>;

    /// Writes the attempt's files (registered in `written`) and proposes the final object of
    /// the version after `base`.
    fn build(
        &mut self,
        storage: &dyn Storage,
        base: &Self::Base,
        written: &mut Written<'_>,
    ) -> Result<Plan<Self::Output>>;

    /// Runs after the version was published (hints, logs); it cannot fail the commit.
    fn published(&mut self, storage: &dyn Storage, output: &Self::Output) {
        let _ = (storage, output);
    }
}

/// A published commit.
#[derive(Debug)]
pub struct Committed<T> {
    pub output: T,
    /// Attempts it took (1 when no race was lost).
    pub attempts: u32,
}

/// Runs `attempt` until it publishes, at most `policy.max_attempts` times; `prepared` holds
/// the files written before the first attempt (kept when published or when the outcome is
/// unknown, deleted otherwise). `what` names the commit in logs and errors.
pub fn commit<A: Attempt>(
    storage: &dyn Storage,
    policy: RetryPolicy,
    what: &str,
    prepared: Written<'_>,
    attempt: &mut A,
) -> Result<Committed<A::Output>> {
    let max_attempts = policy.max_attempts.max(1);
    let mut last_race = String::new();
    for n in 1..=max_attempts {
        let base = attempt.read_base(storage)?;
        attempt.check(storage, &base)?;
        let mut written = Written::new(storage);
        // Publishes the plan's final step; what a lost race means for the log; and whether an
        // error that is not an unknown outcome proves nothing was published (only a refused
        // swap does: nothing else is refused before it could land).
        let (outcome, unreferenced, output, race, refusal_proves_unpublished) = match attempt
            .build(storage, &base, &mut written)?
        {
            Plan::Publish(p) if versions_kept_by_catalog() => {
                // Putting the version file would run the table's files ahead of its
                // catalog: catalog readers would miss it, and every commit of that version
                // through the catalog would be refused from then on.
                return Err(Error::internal(format!(
                    "{what}: the table's catalog keeps its versions, so {} must be committed through it, not put",
                    p.path
                )));
            }
            Plan::Publish(p) => (
                publish(storage, &p.path, &p.bytes),
                p.unreferenced,
                p.output,
                format!("{} was published by another writer", p.path),
                false,
            ),
            Plan::Commit(p) => (
                publish_to_catalog(&*crate::table_catalog::current(), &p),
                p.unreferenced,
                p.output,
                "the catalog refused the change: the table moved on".to_string(),
                false,
            ),
            Plan::Swap(p) => (
                publish_by_swap(storage, &*crate::table_catalog::current(), &p, &mut written),
                p.unreferenced,
                p.output,
                format!(
                    "the table no longer pointed at {}: another writer committed",
                    p.expected
                ),
                true,
            ),
            // A plain error of `publish_version` comes before any request may have landed.
            Plan::Version(p) => (
                publish_version(storage, &*crate::table_catalog::current(), &p),
                p.unreferenced,
                p.output,
                "the catalog already held that version: another writer committed".to_string(),
                true,
            ),
            Plan::BaseMoved(why) => {
                crate::warn!("{what}: attempt {n} found its base moved ({why}); retrying");
                last_race = why;
                continue;
            }
            Plan::Done(output) => {
                written.discard();
                prepared.discard();
                return Ok(Committed {
                    output,
                    attempts: n,
                });
            }
        };
        match outcome {
            Ok(Published::Ours) => {
                written.keep();
                prepared.keep();
                delete_unreferenced(storage, what, &unreferenced);
                attempt.published(storage, &output);
                return Ok(Committed {
                    output,
                    attempts: n,
                });
            }
            Ok(Published::Theirs) => {
                crate::warn!(
                    "{what}: attempt {n} lost the race ({race}); retrying on the new state"
                );
                last_race = race;
                written.discard();
            }
            Err(e) if refusal_proves_unpublished && !e.message().contains(UNKNOWN_OUTCOME) => {
                written.discard();
                prepared.discard();
                return Err(e.context(what));
            }
            Err(e) => {
                written.keep();
                prepared.keep();
                return Err(e.context(what));
            }
        }
    }
    Err(Error::conflict(format!(
        "{what}: gave up after {max_attempts} attempts lost races ({last_race})"
    )))
}

fn versions_kept_by_catalog() -> bool {
    crate::table_catalog::current().kind() == crate::table_catalog::CatalogKind::Versions
}

fn delete_unreferenced(storage: &dyn Storage, what: &str, paths: &[String]) {
    for path in paths {
        if let Err(e) = storage.delete(path) {
            crate::warn!("{what}: could not delete unreferenced {path}: {e}");
        }
    }
}

/// Has the catalog apply `proposal`, and tells whose change the table holds afterwards, as
/// [`publish`] does for an object. A failure that may hide an applied change is followed by a
/// read of the table: the proposal recognised there is ours; else the request is repeated
/// (its requirements let it land at most once). An error means the outcome is unknown, or the
/// catalog refused the request before applying it (a credential, a request the host refused):
/// either way the caller keeps every file.
pub fn publish_to_catalog<T>(
    catalog: &dyn TableCatalog,
    proposal: &CatalogProposal<T>,
) -> Result<Published> {
    read_back_after_failures(
        catalog,
        "a commit",
        || {
            catalog
                .commit(&proposal.requirements, &proposal.updates)
                .map(|_| ())
        },
        |state, _, _| (proposal.recognise)(state),
    )
}

/// The part of [`publish_to_catalog`] and [`publish_by_swap`] they share: sends `request` up
/// to [`PUT_REPEATS`] times, and after a failure that may hide an applied change reads the
/// table back: what `recognised` (given whether an earlier request may have landed, and the
/// failure) recognises is ours; after a `conflict` anything else is a rival's; after an
/// unknown outcome the request is sent again (it lands at most once). A failure before any
/// request may have landed is returned as it is.
fn read_back_after_failures(
    catalog: &dyn TableCatalog,
    what: &str,
    request: impl Fn() -> Result<()>,
    recognised: impl Fn(&TableState, bool, &Error) -> Result<bool>,
) -> Result<Published> {
    let mut maybe_applied = false;
    let mut last_failure = None;
    for _ in 0..PUT_REPEATS {
        let e = match request() {
            Ok(()) => return Ok(Published::Ours),
            Err(e) => e,
        };
        let unknown = e.message().contains(UNKNOWN_OUTCOME);
        if e.kind() != ErrorKind::Conflict && !unknown && !maybe_applied {
            // Refused before anything was applied, and no earlier request may have landed.
            return Err(e);
        }
        maybe_applied |= unknown;
        match catalog.load() {
            Ok(Some(state)) if recognised(&state, maybe_applied, &e)? => {
                crate::warn!(
                    "the catalog's answer to {what} was lost ({e}), and the table holds the commit: it was applied"
                );
                return Ok(Published::Ours);
            }
            Ok(_) if e.kind() == ErrorKind::Conflict => return Ok(Published::Theirs),
            Ok(_) => last_failure = Some(e),
            Err(read) => {
                return Err(catalog_unknown(&format!(
                    "{e}; reading the table back failed too: {read}"
                )));
            }
        }
    }
    let why = last_failure.map_or_else(|| "no answer".to_string(), |e| e.to_string());
    Err(catalog_unknown(&why))
}

/// Writes `proposal`'s metadata file (registered in `written` first) and has the catalog point
/// the table at it, then tells whose file the table points at afterwards, as
/// [`publish_to_catalog`] does for a list of updates:
///
/// - the swap succeeded: [`Published::Ours`];
/// - `conflict` (the table no longer points at the expected file): the table is read, and
///   [`Published::Theirs`] unless it points at our file (an earlier swap of ours whose answer
///   was lost landed);
/// - an unknown outcome: the table is read; pointing at our file (or, moved on since, holding
///   what the proposal recognises) it is ours; still pointing at the expected file, the swap
///   is repeated (it lands at most once: it swaps only from the expected file);
/// - any other error, before any swap may have landed: returned as it is, and the caller may
///   delete every file, since nothing points at them.
///
/// An error holding [`UNKNOWN_OUTCOME`] means the swap may have landed: the caller must keep
/// every file. A failure to write the metadata file is a plain error (no swap was asked).
pub fn publish_by_swap<T>(
    storage: &dyn Storage,
    catalog: &dyn TableCatalog,
    proposal: &PointerProposal<T>,
    written: &mut Written<'_>,
) -> Result<Published> {
    if proposal.path == proposal.expected {
        return Err(Error::internal(format!(
            "a new metadata file must have a name of its own, not the current one's ({})",
            proposal.path
        )));
    }
    written.add(proposal.path.clone());
    write_new_file(storage, &proposal.path, &proposal.bytes)?;
    read_back_after_failures(
        catalog,
        "a metadata swap",
        || catalog.swap_metadata_file(&proposal.expected, &proposal.path),
        |state, maybe_applied, e| {
            if state.metadata_file == proposal.path {
                return Ok(true);
            }
            // Only a swap that may have landed can have been built upon since.
            if !maybe_applied {
                return Ok(false);
            }
            (proposal.recognise)(state).map_err(|read| {
                catalog_unknown(&format!(
                    "{e}; the table read back cannot be told apart: {read}"
                ))
            })
        },
    )
}

/// Has the catalog commit `proposal`'s version, and tells whose version the table holds
/// afterwards, as [`publish`] does for an object:
///
/// - committed: [`Published::Ours`];
/// - refused as a lost race: [`Published::Theirs`], unless an earlier request of ours may have
///   landed and the table holds our version (that request's answer was lost);
/// - an unknown outcome: the table is read; holding our version it is ours, else the request is
///   repeated (the catalog commits a version at most once, so it lands at most once);
/// - any other error before any request may have landed: returned as it is.
///
/// An error means the outcome is unknown, or the catalog refused the request before committing
/// it: either way the caller keeps every file.
pub fn publish_version<T>(
    storage: &dyn Storage,
    catalog: &dyn TableCatalog,
    proposal: &VersionProposal<T>,
) -> Result<Published> {
    let mut maybe_applied = false;
    let mut last_failure = None;
    for _ in 0..PUT_REPEATS {
        let e = match catalog.commit_version(&proposal.version, &proposal.statistics) {
            Ok(true) => return Ok(Published::Ours),
            Ok(false) if !maybe_applied => return Ok(Published::Theirs),
            Ok(false) => {
                let lost = Error::conflict("the catalog already held the version");
                return match (proposal.recognise)(storage) {
                    Ok(true) => {
                        crate::warn!(
                            "the catalog's answer to a version commit was lost, and the table holds the version: it was committed"
                        );
                        Ok(Published::Ours)
                    }
                    Ok(false) => Ok(Published::Theirs),
                    Err(read) => Err(catalog_unknown(&format!(
                        "{lost} after an unanswered request; reading the table back failed: {read}"
                    ))),
                };
            }
            Err(e) => e,
        };
        let unknown = e.message().contains(UNKNOWN_OUTCOME);
        if !unknown && !maybe_applied {
            // Refused before anything was committed, and no earlier request may have landed.
            return Err(e);
        }
        maybe_applied |= unknown;
        match (proposal.recognise)(storage) {
            Ok(true) => {
                crate::warn!(
                    "the catalog's answer to a version commit was lost ({e}), and the table holds the version: it was committed"
                );
                return Ok(Published::Ours);
            }
            Ok(false) => last_failure = Some(e),
            Err(read) => {
                return Err(catalog_unknown(&format!(
                    "{e}; reading the table back failed too: {read}"
                )));
            }
        }
    }
    let why = last_failure.map_or_else(|| "no answer".to_string(), |e| e.to_string());
    Err(catalog_unknown(&why))
}

/// Writes a file no other writer names, with put-if-absent; "already exists" after a failed
/// request of ours is fine when the object holds our bytes.
fn write_new_file(storage: &dyn Storage, path: &str, bytes: &[u8]) -> Result<()> {
    let mut last_failure = None;
    for _ in 0..PUT_REPEATS {
        let e = match storage.put_if_absent(path, bytes) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        match storage.get_opt(path) {
            Ok(Some(found)) if found == bytes => return Ok(()),
            Ok(Some(_)) => {
                return Err(Error::internal(format!(
                    "{path} exists already with other content: a new metadata file's name must be unique"
                )));
            }
            Ok(None) => last_failure = Some(e),
            Err(read) => {
                return Err(Error::io(format!(
                    "writing {path} failed ({e}) and reading it back failed too: {read}"
                )));
            }
        }
    }
    let why = last_failure.map_or_else(|| "no answer".to_string(), |e| e.to_string());
    Err(Error::io(format!("writing {path} failed: {why}")))
}

fn catalog_unknown(why: &str) -> Error {
    Error::io(format!(
        "{UNKNOWN_OUTCOME}: the catalog's commit failed ({why}) and whether it was applied \
         cannot be told; every file of the commit is kept"
    ))
}

/// The exactly-once guard of a tiering commit: `found` is the snapshot committed by tiering
/// after `tiered_base`, the base this round planned from (a format's
/// `get_missing_lake_snapshot(tiered_base)`). When there is one, another round tiered offsets
/// this one holds too: the commit is refused with a `conflict` that is never retried, as a
/// retry would store the same rows twice.
pub fn refuse_overlap(
    tiered_base: Option<i64>,
    found: Option<crate::wit::CommittedSnapshot>,
) -> Result<()> {
    let Some(found) = found else {
        return Ok(());
    };
    let base = tiered_base.map_or("none".to_string(), |b| b.to_string());
    Err(Error::conflict(format!(
        "lake snapshot {} was committed by another tiering round after snapshot {base}, \
         the one this round planned from: not retried, as a retry would store the same rows twice",
        found.snapshot_id
    )))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::storage::MemoryStorage;
    use crate::testing::{LostAck, LostAckStorage};

    /// A toy format: version `v/N` holds "N:<attempt id>" and lists its file `f/<id>`.
    struct Toy {
        check_fails: bool,
        attempts: u32,
    }

    impl Attempt for Toy {
        type Base = u32;
        type Output = u32;
        fn read_base(&mut self, storage: &dyn Storage) -> Result<u32> {
            Ok(storage.list("v")?.len() as u32)
        }
        fn check(&mut self, _: &dyn Storage, _: &u32) -> Result<()> {
            if self.check_fails {
                return Err(Error::conflict("refused"));
            }
            Ok(())
        }
        fn build(
            &mut self,
            _: &dyn Storage,
            base: &u32,
            written: &mut Written<'_>,
        ) -> Result<Plan<u32>> {
            self.attempts += 1;
            let id = uuid::Uuid::new_v4();
            written.put(format!("f/{id}"), b"data")?;
            Ok(Plan::Publish(Proposal {
                path: format!("v/{}", base + 1),
                bytes: format!("{}:{id}", base + 1).into_bytes(),
                unreferenced: Vec::new(),
                output: base + 1,
            }))
        }
    }

    fn toy() -> Toy {
        Toy {
            check_fails: false,
            attempts: 0,
        }
    }

    fn files(s: &dyn Storage) -> usize {
        s.list("f").unwrap().len()
    }

    #[test]
    fn a_lost_acknowledgement_is_recognised_as_ours() {
        for lost in [LostAck::Io, LostAck::AlreadyExists] {
            let inner = MemoryStorage::new();
            let storage = LostAckStorage::new(&inner, |p| p == "v/1", lost);
            let prepared = {
                let mut w = Written::new(&storage);
                w.put("f/prepared", b"x").unwrap();
                w
            };
            let mut t = toy();
            let c = commit(&storage, RetryPolicy::retries(3), "toy", prepared, &mut t).unwrap();
            assert_eq!((c.output, c.attempts), (1, 1), "{lost:?}");
            assert_eq!(files(&inner), 2, "nothing deleted ({lost:?})");
            assert_eq!(inner.list("v").unwrap().len(), 1);
        }
    }

    #[test]
    fn a_lost_race_is_retried_and_its_files_deleted() {
        let inner = MemoryStorage::new();
        let rival_done = Cell::new(false);
        let storage = crate::testing::RacingStorage::new(
            &inner,
            |p| p == "v/1",
            || {
                inner.put("v/1", b"rival").unwrap();
                rival_done.set(true);
            },
        );
        let mut t = toy();
        let c = commit(
            &storage,
            RetryPolicy::retries(3),
            "toy",
            Written::new(&storage),
            &mut t,
        )
        .unwrap();
        assert!(rival_done.get());
        assert_eq!((c.output, c.attempts), (2, 2));
        assert_eq!(files(&inner), 1, "the losing attempt's file is gone");
    }

    #[test]
    fn a_refused_check_is_final_and_deletes_the_prepared_files() {
        let storage = MemoryStorage::new();
        let mut prepared = Written::new(&storage);
        prepared.put("f/prepared", b"x").unwrap();
        let mut t = Toy {
            check_fails: true,
            attempts: 0,
        };
        let e = commit(&storage, RetryPolicy::retries(9), "toy", prepared, &mut t).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict);
        assert_eq!(t.attempts, 0, "never built, never retried");
        assert_eq!(files(&storage), 0);
    }

    #[test]
    fn an_unknown_outcome_keeps_every_file() {
        let inner = MemoryStorage::new();
        // The put fails without writing, and reading back fails too.
        let storage = LostAckStorage::new(&inner, |p| p == "v/1", LostAck::Unreadable);
        let mut prepared = Written::new(&storage);
        prepared.put("f/prepared", b"x").unwrap();
        let e = commit(
            &storage,
            RetryPolicy::retries(3),
            "toy",
            prepared,
            &mut toy(),
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io);
        assert!(e.message().contains(UNKNOWN_OUTCOME), "{e}");
        assert_eq!(files(&inner), 2, "no file deleted");
    }

    #[test]
    fn too_many_lost_races_end_in_a_conflict_and_clean_up() {
        let storage = MemoryStorage::new();
        // Every version this commit proposes is already taken by a rival.
        struct Always;
        impl Attempt for Always {
            type Base = ();
            type Output = ();
            fn read_base(&mut self, _: &dyn Storage) -> Result<()> {
                Ok(())
            }
            fn check(&mut self, _: &dyn Storage, _: &()) -> Result<()> {
                Ok(())
            }
            fn build(
                &mut self,
                _: &dyn Storage,
                _: &(),
                written: &mut Written<'_>,
            ) -> Result<Plan<()>> {
                written.put(format!("f/{}", uuid::Uuid::new_v4()), b"x")?;
                Ok(Plan::Publish(Proposal {
                    path: "v/1".into(),
                    bytes: uuid::Uuid::new_v4().as_bytes().to_vec(),
                    unreferenced: Vec::new(),
                    output: (),
                }))
            }
        }
        storage.put("v/1", b"rival").unwrap();
        let e = commit(
            &storage,
            RetryPolicy::retries(2),
            "toy",
            Written::new(&storage),
            &mut Always,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict);
        assert!(e.message().contains("after 3 attempts"), "{e}");
        assert_eq!(files(&storage), 0);
    }

    #[test]
    fn retry_policy_from_table_options() {
        let p = RetryPolicy::from_options([None, Some("4")], "commit.max-retries", 10).unwrap();
        assert_eq!(p.max_attempts, 5);
        let p = RetryPolicy::from_options([None, None], "commit.max-retries", 10).unwrap();
        assert_eq!(p.max_attempts, 11);
        let e = RetryPolicy::from_options([Some("-1")], "commit.max-retries", 10).unwrap_err();
        assert!(e.message().contains("commit.max-retries"), "{e}");
    }

    /// What the fake metastore does with the next swap.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum SwapFault {
        /// Swaps, then answers an unknown outcome (a lost acknowledgement).
        ApplyThenUnknown,
        /// Swaps, a rival builds on the swapped file at once, and the answer is unknown.
        ApplyRivalThenUnknown,
        /// Answers an unknown outcome without swapping.
        Unknown,
        /// A rival swaps first.
        RivalFirst,
        /// Refuses the request before looking at the table (a wrong credential).
        Refuse,
    }

    /// A metastore keeping the table's current metadata file: its state's `metadata` lists
    /// every file the pointer went through, oldest first (as Iceberg's `metadata-log` does).
    struct FakePointer {
        history: std::cell::RefCell<Vec<String>>,
        faults: std::cell::RefCell<Vec<SwapFault>>,
        swaps: Cell<u32>,
    }

    impl FakePointer {
        fn new() -> std::rc::Rc<FakePointer> {
            std::rc::Rc::new(FakePointer {
                history: std::cell::RefCell::new(vec!["m/0-first".into()]),
                faults: Default::default(),
                swaps: Cell::new(0),
            })
        }
        fn pointer(&self) -> String {
            self.history.borrow().last().unwrap().clone()
        }
        fn rival(&self) {
            let n = self.history.borrow().len();
            self.history.borrow_mut().push(format!("m/{n}-rival"));
        }
    }

    impl TableCatalog for FakePointer {
        fn kind(&self) -> crate::table_catalog::CatalogKind {
            crate::table_catalog::CatalogKind::MetadataPointer
        }
        fn load(&self) -> Result<Option<TableState>> {
            Ok(Some(TableState {
                metadata_file: self.pointer(),
                metadata: self.history.borrow().join("\n").into_bytes(),
            }))
        }
        fn create(&self, _: &str) -> Result<TableState> {
            unreachable!()
        }
        fn commit(&self, _: &str, _: &str) -> Result<TableState> {
            unreachable!()
        }
        fn swap_metadata_file(&self, expected: &str, new: &str) -> Result<()> {
            self.swaps.set(self.swaps.get() + 1);
            let fault = {
                let mut f = self.faults.borrow_mut();
                (!f.is_empty()).then(|| f.remove(0))
            };
            match fault {
                Some(SwapFault::Refuse) => {
                    return Err(Error::new(
                        ErrorKind::InvalidInput,
                        "the catalog refused the credential",
                    ));
                }
                Some(SwapFault::Unknown) => {
                    return Err(Error::io(format!(
                        "{UNKNOWN_OUTCOME}: 503 from the catalog"
                    )));
                }
                Some(SwapFault::RivalFirst) => self.rival(),
                _ => {}
            }
            if self.pointer() != expected {
                return Err(Error::conflict(format!(
                    "the table points at {}, not {expected}",
                    self.pointer()
                )));
            }
            self.history.borrow_mut().push(new.to_string());
            match fault {
                Some(SwapFault::ApplyThenUnknown) => {
                    Err(Error::io(format!("{UNKNOWN_OUTCOME}: connection reset")))
                }
                Some(SwapFault::ApplyRivalThenUnknown) => {
                    self.rival();
                    Err(Error::io(format!("{UNKNOWN_OUTCOME}: connection reset")))
                }
                _ => Ok(()),
            }
        }
    }

    /// A toy format on a metastore: version `m/<N>-<id>` holds "<id>" and lists `f/<id>`.
    struct SwapToy {
        attempts: u32,
    }

    impl Attempt for SwapToy {
        type Base = String;
        type Output = String;
        fn read_base(&mut self, _: &dyn Storage) -> Result<String> {
            Ok(crate::table_catalog::current()
                .load()?
                .unwrap()
                .metadata_file)
        }
        fn check(&mut self, _: &dyn Storage, _: &String) -> Result<()> {
            Ok(())
        }
        fn build(
            &mut self,
            _: &dyn Storage,
            base: &String,
            written: &mut Written<'_>,
        ) -> Result<Plan<String>> {
            self.attempts += 1;
            let id = uuid::Uuid::new_v4();
            written.put(format!("f/{id}"), b"data")?;
            let n: u32 = base[2..].split('-').next().unwrap().parse().unwrap();
            let path = format!("m/{}-{id}", n + 1);
            let mine = path.clone();
            Ok(Plan::Swap(PointerProposal {
                expected: base.clone(),
                path: path.clone(),
                bytes: id.to_string().into_bytes(),
                recognise: Box::new(move |state| {
                    Ok(String::from_utf8_lossy(&state.metadata)
                        .lines()
                        .any(|l| l == mine))
                }),
                unreferenced: Vec::new(),
                output: path,
            }))
        }
    }

    fn swap_commit(storage: &dyn Storage) -> Result<Committed<String>> {
        let mut prepared = Written::new(storage);
        prepared.put("f/prepared", b"x").unwrap();
        commit(
            storage,
            RetryPolicy::retries(3),
            "toy",
            prepared,
            &mut SwapToy { attempts: 0 },
        )
    }

    fn metadata_files(s: &dyn Storage) -> usize {
        s.list("m").unwrap().len()
    }

    #[test]
    fn a_swap_writes_a_file_of_its_own_then_points_the_table_at_it() {
        let storage = MemoryStorage::new();
        let fake = FakePointer::new();
        let _installed = crate::table_catalog::install(fake.clone());
        let c = swap_commit(&storage).unwrap();
        assert_eq!(c.attempts, 1);
        assert_eq!(fake.pointer(), c.output);
        assert!(c.output.starts_with("m/1-"), "{}", c.output);
        assert_eq!(storage.get(&c.output).unwrap().len(), 36);
        assert_eq!((files(&storage), fake.swaps.get()), (2, 1));
    }

    #[test]
    fn a_lost_swap_race_deletes_the_attempt_file_and_retries_on_the_rival() {
        let storage = MemoryStorage::new();
        let fake = FakePointer::new();
        let _installed = crate::table_catalog::install(fake.clone());
        fake.faults.borrow_mut().push(SwapFault::RivalFirst);
        let c = swap_commit(&storage).unwrap();
        assert_eq!(c.attempts, 2);
        assert!(
            c.output.starts_with("m/2-"),
            "built on the rival: {}",
            c.output
        );
        assert_eq!(fake.pointer(), c.output);
        assert_eq!(
            metadata_files(&storage),
            1,
            "the losing attempt's metadata file is gone"
        );
        assert_eq!(files(&storage), 2, "the prepared file and the winner's");
    }

    #[test]
    fn a_lost_swap_answer_is_recognised_by_the_pointer_or_what_was_built_on_it() {
        for fault in [
            SwapFault::ApplyThenUnknown,
            SwapFault::ApplyRivalThenUnknown,
        ] {
            let storage = MemoryStorage::new();
            let fake = FakePointer::new();
            let _installed = crate::table_catalog::install(fake.clone());
            fake.faults.borrow_mut().push(fault);
            let c = swap_commit(&storage).unwrap();
            assert_eq!((c.attempts, fake.swaps.get()), (1, 1), "{fault:?}");
            assert!(fake.history.borrow().contains(&c.output), "{fault:?}");
            assert_eq!(metadata_files(&storage), 1, "{fault:?}");
            assert_eq!(files(&storage), 2, "{fault:?}");
        }
    }

    #[test]
    fn a_swap_not_applied_is_repeated_once_and_lands_once() {
        let storage = MemoryStorage::new();
        let fake = FakePointer::new();
        let _installed = crate::table_catalog::install(fake.clone());
        fake.faults.borrow_mut().push(SwapFault::Unknown);
        let c = swap_commit(&storage).unwrap();
        assert_eq!((c.attempts, fake.swaps.get()), (1, 2));
        assert_eq!(fake.history.borrow().len(), 2);
        assert_eq!(fake.pointer(), c.output);
    }

    #[test]
    fn a_swap_whose_outcome_stays_unknown_keeps_every_file() {
        let storage = MemoryStorage::new();
        let fake = FakePointer::new();
        let _installed = crate::table_catalog::install(fake.clone());
        fake.faults.borrow_mut().extend([SwapFault::Unknown; 3]);
        let e = swap_commit(&storage).unwrap_err();
        assert!(e.message().contains(UNKNOWN_OUTCOME), "{e}");
        assert_eq!(fake.pointer(), "m/0-first");
        assert_eq!((files(&storage), metadata_files(&storage)), (2, 1));
    }

    #[test]
    fn a_refused_swap_commits_nothing_and_deletes_every_file() {
        let storage = MemoryStorage::new();
        let fake = FakePointer::new();
        let _installed = crate::table_catalog::install(fake.clone());
        fake.faults.borrow_mut().push(SwapFault::Refuse);
        let e = swap_commit(&storage).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(!e.message().contains(UNKNOWN_OUTCOME), "{e}");
        assert_eq!(fake.swaps.get(), 1, "never repeated");
        assert_eq!(fake.pointer(), "m/0-first");
        assert_eq!((files(&storage), metadata_files(&storage)), (0, 0));
    }

    #[test]
    fn the_new_metadata_file_is_written_before_any_swap() {
        // Its put lands but the answer is lost: read back, it is ours.
        let inner = MemoryStorage::new();
        let storage = LostAckStorage::new(&inner, |p| p.starts_with("m/"), LostAck::Io);
        let fake = FakePointer::new();
        let _installed = crate::table_catalog::install(fake.clone());
        let c = swap_commit(&storage).unwrap();
        assert_eq!((c.attempts, fake.swaps.get()), (1, 1));
        // Its put fails and cannot be read back: no swap is asked, and no file stays.
        let inner = MemoryStorage::new();
        let storage = LostAckStorage::new(&inner, |p| p.starts_with("m/"), LostAck::Unreadable);
        let fake = FakePointer::new();
        let _installed = crate::table_catalog::install(fake.clone());
        let e = swap_commit(&storage).unwrap_err();
        assert!(!e.message().contains(UNKNOWN_OUTCOME), "{e}");
        assert_eq!(fake.swaps.get(), 0);
        assert_eq!(files(&inner), 0);
    }

    /// What the fake version catalog does with the next commit.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum VersionFault {
        /// Commits, then answers an unknown outcome (a lost acknowledgement).
        CommitThenUnknown,
        /// Answers an unknown outcome without committing.
        Unknown,
        /// A rival commits the version first.
        RivalFirst,
        /// Refuses the request before looking at the table (a wrong credential).
        Refuse,
    }

    /// A catalog keeping the table's versions: it writes version `n` as the file `v/<n>`, as
    /// Paimon's REST catalog writes `snapshot/snapshot-<n>`, and answers `false` for a version
    /// it already holds.
    struct FakeVersions<'s> {
        storage: &'s MemoryStorage,
        faults: std::cell::RefCell<Vec<VersionFault>>,
        commits: Cell<u32>,
    }

    impl TableCatalog for FakeVersions<'_> {
        fn kind(&self) -> crate::table_catalog::CatalogKind {
            crate::table_catalog::CatalogKind::Versions
        }
        fn load(&self) -> Result<Option<TableState>> {
            unreachable!("a version catalog is not loaded")
        }
        fn create(&self, _: &str) -> Result<TableState> {
            unreachable!()
        }
        fn commit(&self, _: &str, _: &str) -> Result<TableState> {
            unreachable!()
        }
        fn swap_metadata_file(&self, _: &str, _: &str) -> Result<()> {
            unreachable!()
        }
        fn commit_version(&self, version: &str, _: &str) -> Result<bool> {
            self.commits.set(self.commits.get() + 1);
            let fault = self.faults.borrow_mut().pop();
            if fault == Some(VersionFault::Refuse) {
                return Err(Error::invalid_input("401: the credential was refused"));
            }
            if fault == Some(VersionFault::RivalFirst) {
                self.storage.put("v/1", b"rival").unwrap();
            }
            if fault == Some(VersionFault::Unknown) {
                return Err(catalog_unknown("no answer"));
            }
            if self.storage.get_opt("v/1").unwrap().is_some() {
                return Ok(false);
            }
            self.storage.put("v/1", version.as_bytes()).unwrap();
            if fault == Some(VersionFault::CommitThenUnknown) {
                return Err(catalog_unknown("the answer was lost"));
            }
            Ok(true)
        }
    }

    fn version_proposal(ours: &'static str) -> VersionProposal<()> {
        VersionProposal {
            version: ours.into(),
            statistics: "[]".into(),
            recognise: Box::new(move |s: &dyn Storage| {
                Ok(s.get_opt("v/1")?.is_some_and(|b| b == ours.as_bytes()))
            }),
            unreferenced: Vec::new(),
            output: (),
        }
    }

    fn versions<'s>(storage: &'s MemoryStorage, faults: &[VersionFault]) -> FakeVersions<'s> {
        FakeVersions {
            storage,
            faults: std::cell::RefCell::new(faults.iter().rev().copied().collect()),
            commits: Cell::new(0),
        }
    }

    #[test]
    fn a_version_catalog_decides_every_outcome_of_a_commit() {
        let p = version_proposal("ours");
        // Committed at once.
        let s = MemoryStorage::new();
        let c = versions(&s, &[]);
        assert_eq!(publish_version(&s, &c, &p).unwrap(), Published::Ours);
        // A rival holds the version: a lost race, never repeated.
        let s = MemoryStorage::new();
        let c = versions(&s, &[VersionFault::RivalFirst]);
        assert_eq!(publish_version(&s, &c, &p).unwrap(), Published::Theirs);
        assert_eq!(c.commits.get(), 1);
        // Committed, the answer lost: the table read back holds ours.
        let s = MemoryStorage::new();
        let c = versions(&s, &[VersionFault::CommitThenUnknown]);
        assert_eq!(publish_version(&s, &c, &p).unwrap(), Published::Ours);
        assert_eq!(c.commits.get(), 1);
        // Not committed, the answer lost: repeated, and it lands once.
        let s = MemoryStorage::new();
        let c = versions(&s, &[VersionFault::Unknown]);
        assert_eq!(publish_version(&s, &c, &p).unwrap(), Published::Ours);
        assert_eq!(c.commits.get(), 2);
        // Lost, and a rival commits before the repeat: theirs.
        let s = MemoryStorage::new();
        let c = versions(&s, &[VersionFault::Unknown, VersionFault::RivalFirst]);
        assert_eq!(publish_version(&s, &c, &p).unwrap(), Published::Theirs);
        // Never answered: unknown, after the repeats.
        let s = MemoryStorage::new();
        let c = versions(&s, &[VersionFault::Unknown; 3]);
        let e = publish_version(&s, &c, &p).unwrap_err();
        assert!(e.message().contains(UNKNOWN_OUTCOME), "{e}");
        assert_eq!(c.commits.get(), PUT_REPEATS);
        // Refused before anything was committed: the error as it is, never repeated.
        let s = MemoryStorage::new();
        let c = versions(&s, &[VersionFault::Refuse]);
        let e = publish_version(&s, &c, &p).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(!e.message().contains(UNKNOWN_OUTCOME), "{e}");
        assert_eq!(c.commits.get(), 1);
    }

    /// A catalog of versions installed as the instance's, for the kit's `commit`.
    struct InstalledVersions;

    impl TableCatalog for InstalledVersions {
        fn kind(&self) -> crate::table_catalog::CatalogKind {
            crate::table_catalog::CatalogKind::Versions
        }
        fn load(&self) -> Result<Option<TableState>> {
            unreachable!()
        }
        fn create(&self, _: &str) -> Result<TableState> {
            unreachable!()
        }
        fn commit(&self, _: &str, _: &str) -> Result<TableState> {
            unreachable!()
        }
        fn swap_metadata_file(&self, _: &str, _: &str) -> Result<()> {
            unreachable!()
        }
    }

    #[test]
    fn a_table_whose_catalog_keeps_its_versions_never_gets_a_version_file_put() {
        let storage = MemoryStorage::new();
        let _installed = crate::table_catalog::install(std::rc::Rc::new(InstalledVersions));
        let mut prepared = Written::new(&storage);
        prepared.put("f/prepared", b"x").unwrap();
        let e = commit(
            &storage,
            RetryPolicy::retries(3),
            "toy",
            prepared,
            &mut toy(),
        )
        .unwrap_err();
        assert!(e.message().contains("must be committed through it"), "{e}");
        assert_eq!(storage.get_opt("v/1").unwrap(), None, "no version file put");
        assert_eq!(
            files(&storage),
            0,
            "nothing published: the attempt's files are gone"
        );
    }
}
