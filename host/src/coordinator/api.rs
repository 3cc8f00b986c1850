//! API keys and error codes of the Fluss RPC protocol that the host relies on.

/// `ApiVersions`: the handshake every connection starts with.
pub const API_VERSIONS: i16 = 1000;
/// `Authenticate`: one SASL exchange step.
pub const AUTHENTICATE: i16 = 1038;
/// `CommitLakeTableSnapshot`: registers a lake snapshot and its offsets in Fluss.
pub const COMMIT_LAKE_TABLE_SNAPSHOT: i16 = 1030;
/// `GetFileSystemSecurityToken`: session credentials for `remote.data.dir`.
pub const GET_FILE_SYSTEM_SECURITY_TOKEN: i16 = 1025;
/// `LakeTieringHeartbeat`: table assignment, liveness, finish and failure reports.
pub const LAKE_TIERING_HEARTBEAT: i16 = 1042;
/// `PrepareLakeTableSnapshot`: writes the offsets file a lake snapshot will point to.
pub const PREPARE_LAKE_TABLE_SNAPSHOT: i16 = 1052;

/// `ServerType` value of a coordinator in `ApiVersionsResponse.server_type`.
pub const SERVER_TYPE_COORDINATOR: i32 = 1;

/// Fluss error codes (`org.apache.fluss.rpc.protocol.Errors`) the tiering loop reacts to.
pub mod errors {
    pub const UNKNOWN_SERVER_ERROR: i32 = -1;
    pub const TABLE_NOT_EXIST: i32 = 7;
    pub const INVALID_COORDINATOR_EXCEPTION: i32 = 23;
    /// `GetFileSystemSecurityToken`: the cluster's remote file system hands out no
    /// credentials (Fluss 0.9's GCS, Azure without OAuth).
    pub const SECURITY_TOKEN_EXCEPTION: i32 = 30;
    pub const AUTHENTICATE_EXCEPTION: i32 = 46;
    pub const FENCED_TIERING_EPOCH_EXCEPTION: i32 = 50;
    pub const RETRIABLE_AUTHENTICATE_EXCEPTION: i32 = 51;
    pub const LAKE_SNAPSHOT_NOT_EXIST: i32 = 53;

    /// Whether a per-table heartbeat error means this host no longer owns the table's round.
    pub fn fences_round(code: i32) -> bool {
        matches!(
            code,
            TABLE_NOT_EXIST | INVALID_COORDINATOR_EXCEPTION | FENCED_TIERING_EPOCH_EXCEPTION
        )
    }
}
