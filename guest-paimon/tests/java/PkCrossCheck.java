import java.util.*;
import org.apache.paimon.*;
import org.apache.paimon.catalog.*;
import org.apache.paimon.data.*;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.manifest.*;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.stats.SimpleStats;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.*;
import org.apache.paimon.table.source.*;
import org.apache.paimon.types.*;

/**
 * Cross-check of the Rust Paimon plugin's primary-key tables against Paimon 1.3.1 itself.
 *
 * <ul>
 *   <li>{@code create <warehouse> <db> <table>}: creates the scenario's table through Fluss's own
 *       {@code PaimonLakeCatalog}, exactly as the Fluss coordinator creates lake tables.
 *   <li>{@code write <warehouse> <db> <table> <rounds>}: writes the scenario below into an
 *       existing table the way Fluss 0.9.1's {@code MergeTreeWriter} does (a {@code KeyValue}
 *       per record with an unknown sequence number, written-only, committed per round by
 *       {@code __fluss_lake_tiering}).
 *   <li>{@code dump <warehouse> <db> <table>}: prints every snapshot's data and changelog file
 *       metadata, decoded (keys, statistics, sequence numbers), without names, sizes and times.
 *   <li>{@code read <warehouse> <db> <table>}: prints the batch read of every snapshot and the
 *       changelog a streaming read returns for it.
 * </ul>
 *
 * <p>The scenario must stay in sync with {@code java_paimon_crosscheck.rs}.
 */
public class PkCrossCheck {
    static FileStoreTable table(String wh, String db, String t) throws Exception {
        Catalog c = CatalogFactory.createCatalog(CatalogContext.create(new Path(wh)));
        return (FileStoreTable) c.getTable(Identifier.create(db, t));
    }

    // The scenario shared with the Rust side: rounds of 60 records over keys (region, id, code),
    // partitioned by region.
    static final String[] CODES = {"a", "bb", "long-code-\u00fc-xyz", "Z"};
    static String region(int r, int i) { return (i / 3 + r) % 2 == 0 ? "eu" : "us"; }
    static int id(int r, int i) { return (i * 7 + r * 3) % 11; }
    static String code(int r, int i) { return CODES[(i + 2 * r) % 4]; }
    static RowKind kind(int r, int i) {
        switch ((i + r) % 6) { case 2: return RowKind.UPDATE_BEFORE; case 3: case 5: return RowKind.UPDATE_AFTER; case 4: return RowKind.DELETE; default: return RowKind.INSERT; }
    }
    static String name(int r, int i) {
        if (i % 9 == 0) return null;
        if (i % 5 == 0) return "a rather long name that stats truncate, " + r + "/" + i;
        return "n" + id(r, i) + "-" + r + "-" + i;
    }
    static double score(int r, int i) { return i * 0.5 - r; }
    static long amountUnscaled(int r, int i) { return (i * 1234567891234L - r * 99L) * (i % 2 == 0 ? 1 : -1); }
    static long tsMicros(int r, int i) { return 1_700_000_000_000_000L + i * 1_000_001L + r; }
    static long commitMillis(int i) { return 1_750_000_000_000L + i; }

    static void create(String wh, String db, String t) throws Exception {
        org.apache.fluss.config.Configuration conf = new org.apache.fluss.config.Configuration();
        conf.setString("warehouse", wh);
        org.apache.fluss.metadata.Schema schema = org.apache.fluss.metadata.Schema.newBuilder()
                .column("region", org.apache.fluss.types.DataTypes.STRING())
                .column("id", org.apache.fluss.types.DataTypes.INT())
                .column("code", org.apache.fluss.types.DataTypes.STRING())
                .column("name", org.apache.fluss.types.DataTypes.STRING())
                .column("score", org.apache.fluss.types.DataTypes.DOUBLE())
                .column("amount", org.apache.fluss.types.DataTypes.DECIMAL(20, 4))
                .column("ts", org.apache.fluss.types.DataTypes.TIMESTAMP(6))
                .primaryKey("region", "id", "code")
                .build();
        org.apache.fluss.metadata.TableDescriptor descriptor = org.apache.fluss.metadata.TableDescriptor.builder()
                .schema(schema)
                .distributedBy(2)
                .partitionedBy("region")
                .property("table.datalake.enabled", "true")
                .property("table.datalake.format", "paimon")
                .property("table.replication.factor", "1")
                .build();
        try (org.apache.fluss.lake.paimon.PaimonLakeCatalog catalog = new org.apache.fluss.lake.paimon.PaimonLakeCatalog(conf)) {
            catalog.createTable(org.apache.fluss.metadata.TablePath.of(db, t), descriptor,
                    new org.apache.fluss.lake.lakestorage.LakeCatalog.Context() {
                        public boolean isCreatingFlussTable() { return true; }
                        public org.apache.fluss.security.acl.FlussPrincipal getFlussPrincipal() {
                            return org.apache.fluss.security.acl.FlussPrincipal.ANONYMOUS;
                        }
                        public org.apache.fluss.metadata.TableDescriptor getCurrentTable() { return null; }
                        public org.apache.fluss.metadata.TableDescriptor getExpectedTable() { return descriptor; }
                    });
        }
    }

    static void write(String wh, String db, String t, int rounds) throws Exception {
        FileStoreTable table = table(wh, db, t).copy(Collections.singletonMap("write-only", "true"));
        Map<String, Long> offsets = new HashMap<>();
        for (int r = 0; r < rounds; r++) {
            TableWriteImpl<KeyValue> write = (TableWriteImpl<KeyValue>) table.newWrite("__fluss_lake_tiering").withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));
            RowKeyExtractor ext = table.createRowKeyExtractor();
            KeyValue kv = new KeyValue();
            for (int i = 0; i < 60; i++) {
                String n = name(r, i);
                GenericRow row = GenericRow.ofKind(kind(r, i), BinaryString.fromString(region(r, i)), id(r, i),
                        BinaryString.fromString(code(r, i)), n == null ? null : BinaryString.fromString(n), score(r, i),
                        Decimal.fromBigDecimal(new java.math.BigDecimal(java.math.BigInteger.valueOf(amountUnscaled(r, i)), 4), 20, 4),
                        Timestamp.fromMicros(tsMicros(r, i)), 0, 0L, Timestamp.fromEpochMillis(commitMillis(i)));
                ext.setRecord(row);
                int bucket = ext.bucket();
                long off = offsets.merge(region(r, i) + "/" + bucket, 1L, Long::sum) - 1;
                row.setField(7, bucket);
                row.setField(8, off);
                ext.setRecord(row);
                kv.replace(ext.trimmedPrimaryKey(), KeyValue.UNKNOWN_SEQUENCE, row.getRowKind(), row);
                write.getWrite().write(ext.partition(), bucket, kv);
            }
            List<CommitMessage> msgs = write.prepareCommit();
            write.close();
            ManifestCommittable mc = new ManifestCommittable(Long.MAX_VALUE);
            msgs.forEach(mc::addFileCommittable);
            mc.addProperty("fluss-offsets", "/o/" + r);
            try (TableCommitImpl commit = table.newCommit("__fluss_lake_tiering")) { commit.commit(mc); }
        }
    }

    static String rowString(InternalRow row, RowType type) {
        if (row == null) return "null";
        StringBuilder sb = new StringBuilder("(");
        for (int i = 0; i < type.getFieldCount(); i++) {
            if (i > 0) sb.append(", ");
            Object v = InternalRow.createFieldGetter(type.getTypeAt(i), i).getFieldOrNull(row);
            sb.append(v);
        }
        return sb.append(")").toString();
    }

    static String stats(SimpleStats s, RowType type) {
        return "min=" + rowString(s.minValues(), type) + " max=" + rowString(s.maxValues(), type)
                + " nulls=" + (s.nullCounts() == null ? "null" : Arrays.toString(nullCounts(s.nullCounts())));
    }

    static Long[] nullCounts(BinaryArray a) {
        Long[] out = new Long[a.size()];
        for (int i = 0; i < a.size(); i++) out[i] = a.isNullAt(i) ? null : a.getLong(i);
        return out;
    }

    static RowType project(RowType full, List<String> cols) {
        if (cols == null) return full;
        List<DataField> fs = new ArrayList<>();
        for (String c : cols) fs.add(full.getField(c));
        return new RowType(fs);
    }

    static void dump(String wh, String db, String t) throws Exception {
        FileStoreTable table = table(wh, db, t);
        RowType keyType = new RowType(table.schema().trimmedPrimaryKeysFields());
        RowType valueType = table.rowType();
        long latest = table.snapshotManager().latestSnapshotId();
        for (long id = 1; id <= latest; id++) {
            Snapshot s = table.snapshotManager().snapshot(id);
            System.out.println("snapshot " + id + " kind=" + s.commitKind() + " total=" + s.totalRecordCount()
                    + " delta=" + s.deltaRecordCount() + " changelog=" + s.changelogRecordCount()
                    + " hasChangelogList=" + (s.changelogManifestList() != null) + " user=" + s.commitUser() + " ident=" + s.commitIdentifier());
            for (ScanMode mode : new ScanMode[] {ScanMode.DELTA, ScanMode.CHANGELOG}) {
                List<ManifestEntry> files = new ArrayList<>(table.store().newScan().withSnapshot(id).withKind(mode).plan().files());
                files.sort(Comparator.comparing((ManifestEntry e) -> rowString(e.partition(), table.schema().logicalPartitionType()))
                        .thenComparing(e -> e.bucket()).thenComparing(e -> e.file().minSequenceNumber()));
                for (ManifestEntry e : files) {
                    DataFileMeta f = e.file();
                    String prefix = f.fileName().substring(0, f.fileName().indexOf('-') + 1);
                    System.out.println("  " + mode + " kind=" + e.kind() + " partition=" + rowString(e.partition(), table.schema().logicalPartitionType()) + " bucket=" + e.bucket() + "/" + e.totalBuckets() + " prefix=" + prefix
                            + " level=" + f.level() + " rows=" + f.rowCount() + " seq=" + f.minSequenceNumber() + ".." + f.maxSequenceNumber()
                            + " deletes=" + f.deleteRowCount().orElse(null) + " source=" + f.fileSource().orElse(null) + " schema=" + f.schemaId()
                            + "\n    minKey=" + rowString(f.minKey(), keyType) + " maxKey=" + rowString(f.maxKey(), keyType)
                            + "\n    keyStats " + stats(f.keyStats(), keyType)
                            + "\n    valueStatsCols=" + f.valueStatsCols()
                            + "\n    valueStats " + stats(f.valueStats(), project(valueType, f.valueStatsCols()))
                            + "\n    extra=" + f.extraFiles() + " index=" + (f.embeddedIndex() != null) + " ext=" + f.externalPath().orElse(null) + " firstRowId=" + f.firstRowId() + " writeCols=" + f.writeCols());
                }
            }
        }
    }

    static void print(String label, RecordReader<InternalRow> reader, RowType type) throws Exception {
        List<String> out = new ArrayList<>();
        reader.forEachRemaining(row -> out.add(row.getRowKind().shortString() + " " + rowString(row, type)));
        reader.close();
        System.out.println(label + " (" + out.size() + " rows)");
        out.forEach(l -> System.out.println("  " + l));
    }

    static void read(String wh, String db, String t) throws Exception {
        FileStoreTable base = table(wh, db, t);
        RowType type = base.rowType();
        long latest = base.snapshotManager().latestSnapshotId();
        for (long id = 1; id <= latest; id++) {
            FileStoreTable table = base.copy(Collections.singletonMap("scan.snapshot-id", String.valueOf(id)));
            ReadBuilder rb = table.newReadBuilder();
            List<String> rows = new ArrayList<>();
            RecordReader<InternalRow> reader = rb.newRead().createReader(rb.newScan().plan());
            reader.forEachRemaining(row -> rows.add(row.getRowKind().shortString() + " " + rowString(row, type)));
            reader.close();
            Collections.sort(rows);
            System.out.println("batch read at snapshot " + id + " (" + rows.size() + " rows)");
            rows.forEach(l -> System.out.println("  " + l));
            Snapshot s = base.snapshotManager().snapshot(id);
            if (s.changelogManifestList() != null) {
                ReadBuilder srb = base.newReadBuilder();
                StreamTableScan scan = srb.newStreamScan();
                scan.restore(id);
                TableScan.Plan plan = scan.plan();
                print("changelog of snapshot " + id, srb.newRead().createReader(plan), type);
            }
        }
    }

    public static void main(String[] a) throws Exception {
        switch (a[0]) {
            case "create": create(a[1], a[2], a[3]); break;
            case "write": write(a[1], a[2], a[3], Integer.parseInt(a[4])); break;
            case "dump": dump(a[1], a[2], a[3]); break;
            case "read": read(a[1], a[2], a[3]); break;
            default: throw new IllegalArgumentException(a[0]);
        }
    }
}
