import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;

/**
 * Reads Iceberg tables with Java Iceberg (the version Fluss's Iceberg plugin ships, which is
 * what Fluss and Flink/Spark engines run) through the Hadoop catalog, and prints what it sees
 * as one JSON object per table: schema (field ids, types, required), partition spec, sort
 * order, and per snapshot its sequence number, operation, summary and the file scan plan
 * (data files, their record counts and partition tuples, and the delete files attached to
 * each). Java's metadata and manifest parsers are strict, so any spec violation in what the
 * Rust plugin wrote fails here.
 *
 *   java -cp <iceberg plugin jars> IcebergCheck <table-dir>...
 */
public final class IcebergCheck {
    private static String q(Object s) {
        return "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    public static void main(String[] args) throws Exception {
        HadoopTables tables = new HadoopTables(new Configuration());
        for (String dir : args) {
            Table t = tables.load(dir);
            StringBuilder o = new StringBuilder("{\"table\":").append(q(dir));
            o.append(",\"fields\":[");
            List<String> fields = new ArrayList<>();
            for (Types.NestedField f : t.schema().columns()) {
                fields.add("{\"id\":" + f.fieldId() + ",\"name\":" + q(f.name()) + ",\"type\":"
                        + q(f.type()) + ",\"required\":" + f.isRequired() + "}");
            }
            o.append(String.join(",", fields)).append("]");
            o.append(",\"identifier_field_ids\":").append(t.schema().identifierFieldIds());
            o.append(",\"spec\":").append(q(t.spec())).append(",\"sort_order\":").append(q(t.sortOrder()));
            o.append(",\"snapshots\":[");
            List<String> snaps = new ArrayList<>();
            for (Snapshot s : t.snapshots()) {
                StringBuilder so = new StringBuilder("{\"id\":" + s.snapshotId() + ",\"sequence\":"
                        + s.sequenceNumber() + ",\"operation\":" + q(s.operation()) + ",\"summary\":{");
                List<String> kv = new ArrayList<>();
                for (Map.Entry<String, String> e : s.summary().entrySet()) {
                    kv.add(q(e.getKey()) + ":" + q(e.getValue()));
                }
                so.append(String.join(",", kv)).append("},\"tasks\":[");
                List<String> tasks = new ArrayList<>();
                try (CloseableIterable<FileScanTask> plan = t.newScan().useSnapshot(s.snapshotId()).planFiles()) {
                    for (FileScanTask task : plan) {
                        int eq = 0, pos = 0;
                        for (DeleteFile d : task.deletes()) {
                            if (d.content() == FileContent.EQUALITY_DELETES) eq++; else pos++;
                        }
                        tasks.add("{\"file\":" + q(task.file().location()) + ",\"rows\":"
                                + task.file().recordCount() + ",\"partition\":" + q(task.file().partition())
                                + ",\"equality_deletes\":" + eq + ",\"position_deletes\":" + pos + "}");
                    }
                }
                so.append(String.join(",", tasks)).append("]}");
                snaps.add(so.toString());
            }
            o.append(String.join(",", snaps)).append("]}");
            System.out.println(o);
        }
    }
}
