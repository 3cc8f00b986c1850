/*
 * Wire vectors of Fluss 1.0's tiering RPC messages, encoded by the Fluss 1.0.0 Java client
 * (org.apache.fluss:fluss-client:1.0.0, which bundles fluss-rpc's generated messages, the
 * codec and the shaded netty).
 *
 * The vectors (*.hex, constants.txt) are checked in next to this file so that CI needs no
 * JVM: host/src/coordinator/java_frames.rs builds the same values with the host's prost
 * types and compares bytes. To regenerate (needs a JDK and Maven Central):
 *
 *     host/tests/frames/java-1.0/generate.sh
 *
 * Each vector is built completely before it is serialized once: a generated Fluss message
 * caches its size, and mutating a nested message after the parent's size was computed would
 * write a stale length. Values are fixed; every vector's Rust twin spells the same values.
 *
 * Files: <name>.hex holds the hex of toByteArray() of a message body; <name>.frame.hex a
 * whole frame as org.apache.fluss.rpc.protocol.MessageCodec writes it (length prefix
 * included); constants.txt the API keys, error codes and server type the host relies on.
 */

import org.apache.fluss.cluster.ServerType;
import org.apache.fluss.rpc.messages.ApiMessage;
import org.apache.fluss.rpc.messages.CommitLakeTableSnapshotRequest;
import org.apache.fluss.rpc.messages.CommitLakeTableSnapshotResponse;
import org.apache.fluss.rpc.messages.GetTableInfoResponse;
import org.apache.fluss.rpc.messages.LakeTieringHeartbeatRequest;
import org.apache.fluss.rpc.messages.LakeTieringHeartbeatResponse;
import org.apache.fluss.rpc.messages.ListPartitionInfosResponse;
import org.apache.fluss.rpc.messages.PbHeartbeatReqForTable;
import org.apache.fluss.rpc.messages.PbHeartbeatRespForTable;
import org.apache.fluss.rpc.messages.PbLakeTableSnapshotInfo;
import org.apache.fluss.rpc.messages.PbLakeTableSnapshotMetadata;
import org.apache.fluss.rpc.messages.PbLakeTieringTableInfo;
import org.apache.fluss.rpc.messages.PbPartitionInfo;
import org.apache.fluss.rpc.messages.PbTableOffsets;
import org.apache.fluss.rpc.messages.PrepareLakeTableSnapshotRequest;
import org.apache.fluss.rpc.messages.PrepareLakeTableSnapshotResponse;
import org.apache.fluss.rpc.protocol.ApiError;
import org.apache.fluss.rpc.protocol.ApiKeys;
import org.apache.fluss.rpc.protocol.Errors;
import org.apache.fluss.rpc.protocol.MessageCodec;
import org.apache.fluss.shaded.netty4.io.netty.buffer.ByteBuf;
import org.apache.fluss.shaded.netty4.io.netty.buffer.ByteBufUtil;
import org.apache.fluss.shaded.netty4.io.netty.buffer.UnpooledByteBufAllocator;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HexFormat;

public final class WireVectors {
    private static Path out;

    public static void main(String[] args) throws Exception {
        out = Paths.get(args[0]);
        heartbeatRequests();
        heartbeatResponses();
        prepare();
        commit();
        partitionsAndTableInfo();
        frames();
        constants();
    }

    // ---- LakeTieringHeartbeat -----------------------------------------------------------

    private static void heartbeatRequests() throws Exception {
        write("heartbeat_request_empty", new LakeTieringHeartbeatRequest());
        write("heartbeat_request_request_table", new LakeTieringHeartbeatRequest().setRequestTable(true));

        LakeTieringHeartbeatRequest r = new LakeTieringHeartbeatRequest();
        // Two tables being tiered: no stats; stats with record_count only; the second
        // has a negative coordinator epoch (a 10-byte int32 varint) and a 9-byte table id.
        r.addTieringTable().setTableId(11).setCoordinatorEpoch(3).setTieringEpoch(1);
        PbHeartbeatReqForTable t2 = r.addTieringTable()
                .setTableId(Long.MAX_VALUE).setCoordinatorEpoch(-1).setTieringEpoch(1L << 40);
        t2.setLakeTieringStats().setRecordCount(9);
        // Finished with full stats, finished with set-but-empty stats (`22 00`).
        PbHeartbeatReqForTable f1 = r.addFinishedTable()
                .setTableId(12).setCoordinatorEpoch(3).setTieringEpoch(2);
        f1.setLakeTieringStats().setFileSize(300).setRecordCount(5);
        PbHeartbeatReqForTable f2 = r.addFinishedTable()
                .setTableId(13).setCoordinatorEpoch(3).setTieringEpoch(4);
        f2.setLakeTieringStats();
        r.addFailedTable().setTableId(14).setCoordinatorEpoch(3).setTieringEpoch(5);
        r.setRequestTable(false); // present and false: `20 00`
        r.addForceFinishedTable(7);
        r.addForceFinishedTable(9);
        write("heartbeat_request_full", r);
    }

    /** The full heartbeat response, without its tiering_table when `withTable` is false. */
    private static LakeTieringHeartbeatResponse heartbeatResponse(boolean withTable) {
        LakeTieringHeartbeatResponse r = new LakeTieringHeartbeatResponse().setCoordinatorEpoch(3);
        if (withTable) {
            tieringTable(r.setTieringTable());
        }
        r.addTieringTableResp().setTableId(11);
        PbHeartbeatRespForTable fin = r.addFinishedTableResp().setTableId(12);
        fin.setError().setErrorCode(Errors.FENCED_TIERING_EPOCH_EXCEPTION.code())
                .setErrorMessage("fenced tiering epoch");
        PbHeartbeatRespForTable failed = r.addFailedTableResp().setTableId(14);
        failed.setError().setErrorCode(Errors.TABLE_NOT_EXIST.code()); // message absent
        return r;
    }

    private static PbLakeTieringTableInfo tieringTable(PbLakeTieringTableInfo t) {
        t.setTableId(15).setTieringEpoch(6);
        t.setTablePath().setDatabaseName("fluss").setTableName("orders");
        return t;
    }

    private static void heartbeatResponses() throws Exception {
        write("heartbeat_response_epoch_only", new LakeTieringHeartbeatResponse().setCoordinatorEpoch(0));
        byte[] full = write("heartbeat_response_full", heartbeatResponse(true));

        // Fields this version does not know: the response without its tiering_table, then
        // the tiering_table field appended by hand with an unknown field 4 inside it, then
        // unknown top-level fields of every wire type (varint 6, a 10-byte varint 7,
        // length-delimited 8, fixed64 9, fixed32 10, a two-byte tag 100).
        ByteArrayOutputStream nested = new ByteArrayOutputStream();
        nested.writeBytes(tieringTable(new PbLakeTieringTableInfo()).toByteArray());
        nested.writeBytes(hex("2001")); // field 4, varint 1
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(heartbeatResponse(false).toByteArray());
        b.write(0x12);
        b.write(nested.size()); // < 128: a one-byte length
        b.writeBytes(nested.toByteArray());
        b.writeBytes(hex("309601"));
        b.writeBytes(hex("38ffffffffffffffffff01"));
        b.writeBytes(hex("420378797a"));
        b.writeBytes(hex("490102030405060708"));
        b.writeBytes(hex("5501020304"));
        b.writeBytes(hex("a00601"));
        byte[] withUnknown = b.toByteArray();
        writeHex("heartbeat_response_unknown_fields", withUnknown);

        // Java's generated parser skips the unknown tags (ProtoCodecUtils.skipUnknownField)
        // and writes the fields it knows back in declaration order.
        LakeTieringHeartbeatResponse reparsed = new LakeTieringHeartbeatResponse();
        reparsed.parseFrom(withUnknown);
        byte[] again = writeHex("heartbeat_response_unknown_fields.java_reparsed", reparsed.toByteArray());
        if (!Arrays.equals(again, full)) {
            throw new AssertionError("Java did not read back the full response");
        }
    }

    // ---- PrepareLakeTableSnapshot -------------------------------------------------------

    private static void prepare() throws Exception {
        PrepareLakeTableSnapshotRequest r = new PrepareLakeTableSnapshotRequest();
        PbTableOffsets plain = r.addBucketOffset().setTableId(11);
        plain.setTablePath().setDatabaseName("fluss").setTableName("logs");
        plain.addBucketOffset().setBucketId(0).setLogEndOffset(100);
        plain.addBucketOffset().setBucketId(1).setLogEndOffset(0);
        plain.addBucketOffset().setBucketId(2); // no log_end_offset
        PbTableOffsets parted = r.addBucketOffset().setTableId(12);
        parted.setTablePath().setDatabaseName("fluss").setTableName("events");
        parted.addBucketOffset().setPartitionId(5).setBucketId(0).setLogEndOffset(Long.MAX_VALUE);
        parted.addBucketOffset().setPartitionId(6).setBucketId(3).setLogEndOffset(42);
        write("prepare_request_tables", r); // ignore_previous_table_offsets absent

        PrepareLakeTableSnapshotRequest ignore = new PrepareLakeTableSnapshotRequest();
        PbTableOffsets t = ignore.addBucketOffset().setTableId(12);
        t.setTablePath().setDatabaseName("fluss").setTableName("events");
        t.addBucketOffset().setPartitionId(5).setBucketId(1).setLogEndOffset(7);
        ignore.setIgnorePreviousTableOffsets(true);
        write("prepare_request_ignore_previous", ignore);

        PrepareLakeTableSnapshotResponse resp = new PrepareLakeTableSnapshotResponse();
        resp.addPrepareLakeTableResp().setErrorCode(Errors.UNKNOWN_SERVER_ERROR.code())
                .setErrorMessage("offsets file not written").setTableId(11);
        resp.addPrepareLakeTableResp().setTableId(12)
                .setLakeTableOffsetsPath("oss://bucket/fluss/lake/12/offsets-3.json");
        write("prepare_response", resp);
    }

    // ---- CommitLakeTableSnapshot --------------------------------------------------------

    private static void commit() throws Exception {
        CommitLakeTableSnapshotRequest r = new CommitLakeTableSnapshotRequest();
        PbLakeTableSnapshotInfo a = r.addTablesReq().setTableId(11).setSnapshotId(3);
        a.addBucketsReq().setBucketId(0).setLogEndOffset(100).setMaxTimestamp(1_700_000_000_000L);
        a.addBucketsReq().setBucketId(1).setLogEndOffset(0).setMaxTimestamp(-1); // no timestamp yet
        a.addBucketsReq().setPartitionId(5).setBucketId(2).setLogEndOffset(7); // max_timestamp absent
        a.setTablePath().setDatabaseName("fluss").setTableName("logs");
        r.addTablesReq().setSnapshotId(4); // no table_id, no buckets, no table_path
        r.addLakeTableSnapshotMetadata().setTableId(11).setSnapshotId(3)
                .setTieredBucketOffsetsFilePath("oss://bucket/fluss/lake/11/tiered-3.json")
                .setReadableBucketOffsetsFilePath("oss://bucket/fluss/lake/11/readable-3.json")
                .setEarliestSnapshotIdToKeep(-1);
        r.addLakeTableSnapshotMetadata().setTableId(12).setSnapshotId(42)
                .setTieredBucketOffsetsFilePath("oss://bucket/fluss/lake/12/tiered-42.json")
                .setEarliestSnapshotIdToKeep(42);
        r.addLakeTableSnapshotMetadata().setTableId(13).setSnapshotId(0)
                .setTieredBucketOffsetsFilePath("");
        write("commit_request_full", r);
        write("commit_request_empty", new CommitLakeTableSnapshotRequest());

        CommitLakeTableSnapshotResponse resp = new CommitLakeTableSnapshotResponse();
        resp.addTableResp().setTableId(11);
        resp.addTableResp().setErrorCode(Errors.FENCED_TIERING_EPOCH_EXCEPTION.code())
                .setErrorMessage("fenced").setTableId(12);
        write("commit_response", resp);
    }

    // ---- Fluss 1.0 per-partition bucket counts (read through fluss-rs by the host) ------

    private static void partitionsAndTableInfo() throws Exception {
        ListPartitionInfosResponse l = new ListPartitionInfosResponse();
        PbPartitionInfo p1 = l.addPartitionsInfo().setPartitionId(5);
        p1.setPartitionSpec().addPartitionKeyValue().setKey("dt").setValue("2026-01-01");
        p1.setRemoteDataDir("oss://bucket/fluss-remote-2").setBucketCount(4);
        PbPartitionInfo p2 = l.addPartitionsInfo().setPartitionId(6);
        p2.setPartitionSpec().addPartitionKeyValue().setKey("dt").setValue("2026-01-02");
        p2.getPartitionSpec().addPartitionKeyValue().setKey("region").setValue("eu");
        l.setSystemPartitionsIncluded(false);
        write("list_partition_infos_response", l);

        GetTableInfoResponse t = new GetTableInfoResponse().setTableId(12).setSchemaId(2)
                .setTableJson("{\"version\":1}".getBytes(StandardCharsets.UTF_8))
                .setCreatedTime(1_700_000_000_000L).setModifiedTime(1_700_000_000_123L)
                .setRemoteDataDir("oss://bucket/fluss-remote-2").setBucketCountEpoch(3);
        write("get_table_info_response", t);
        GetTableInfoResponse old = new GetTableInfoResponse().setTableId(12).setSchemaId(1)
                .setTableJson(new byte[0]).setCreatedTime(0).setModifiedTime(0);
        write("get_table_info_response_minimal", old);
    }

    // ---- Frames, as MessageCodec writes them --------------------------------------------

    private static void frames() throws Exception {
        UnpooledByteBufAllocator alloc = UnpooledByteBufAllocator.DEFAULT;
        LakeTieringHeartbeatRequest req = new LakeTieringHeartbeatRequest().setRequestTable(true);
        writeFrame("heartbeat_request_table.frame",
                MessageCodec.encodeRequest(alloc, ApiKeys.LAKE_TIERING_HEARTBEAT.id, (short) 0, 7, req));
        writeFrame("error_response.frame", MessageCodec.encodeErrorResponse(alloc, 9,
                new ApiError(Errors.LAKE_SNAPSHOT_NOT_EXIST, "no lake snapshot")));
        writeFrame("server_failure.frame", MessageCodec.encodeServerFailure(alloc,
                new ApiError(Errors.UNKNOWN_SERVER_ERROR, "unexpected server error")));
    }

    private static void constants() throws Exception {
        StringBuilder s = new StringBuilder();
        for (ApiKeys k : new ApiKeys[] {ApiKeys.API_VERSIONS, ApiKeys.AUTHENTICATE,
                ApiKeys.COMMIT_LAKE_TABLE_SNAPSHOT, ApiKeys.GET_FILESYSTEM_SECURITY_TOKEN,
                ApiKeys.LAKE_TIERING_HEARTBEAT, ApiKeys.PREPARE_LAKE_TABLE_SNAPSHOT}) {
            s.append("api ").append(k.name()).append(' ').append(k.id).append(' ')
                    .append(k.lowestSupportedVersion).append(' ')
                    .append(k.highestSupportedVersion).append('\n');
        }
        for (Errors e : new Errors[] {Errors.UNKNOWN_SERVER_ERROR, Errors.TABLE_NOT_EXIST,
                Errors.INVALID_COORDINATOR_EXCEPTION, Errors.AUTHENTICATE_EXCEPTION,
                Errors.FENCED_TIERING_EPOCH_EXCEPTION, Errors.RETRIABLE_AUTHENTICATE_EXCEPTION,
                Errors.LAKE_SNAPSHOT_NOT_EXIST}) {
            s.append("error ").append(e.name()).append(' ').append(e.code()).append('\n');
        }
        s.append("server_type COORDINATOR ").append(ServerType.COORDINATOR.toTypeId()).append('\n');
        Files.writeString(out.resolve("constants.txt"), s.toString());
    }

    // ---- Output -------------------------------------------------------------------------

    private static byte[] write(String name, ApiMessage m) throws Exception {
        return writeHex(name, m.toByteArray());
    }

    private static void writeFrame(String name, ByteBuf frame) throws Exception {
        try {
            writeHex(name, ByteBufUtil.getBytes(frame));
        } finally {
            frame.release();
        }
    }

    private static byte[] writeHex(String name, byte[] bytes) throws Exception {
        Files.writeString(out.resolve(name + ".hex"), HexFormat.of().formatHex(bytes) + "\n");
        return bytes;
    }

    private static byte[] hex(String s) {
        return HexFormat.of().parseHex(s);
    }
}
