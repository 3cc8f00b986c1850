import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;

/**
 * Reads the rows of Iceberg tables with Java Iceberg's generic reader (the version Fluss's
 * Iceberg plugin ships), deletes applied as Java applies them, and prints one JSON object per
 * table: {"table", "snapshot", "rows": [{column: value, ...}]} with the given columns (ints,
 * longs and strings; system columns left out).
 *
 *   java -cp <iceberg plugin jars> IcebergRows <table-dir> <column>...
 */
public final class IcebergRows {
    private static String q(Object s) {
        return "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    public static void main(String[] args) throws Exception {
        HadoopTables tables = new HadoopTables(new Configuration());
        Table t = tables.load(args[0]);
        StringBuilder o = new StringBuilder("{\"table\":").append(q(args[0]));
        o.append(",\"snapshot\":").append(t.currentSnapshot() == null ? "null" : t.currentSnapshot().snapshotId());
        o.append(",\"rows\":[");
        boolean first = true;
        try (CloseableIterable<Record> rows = IcebergGenerics.read(t).build()) {
            for (Record r : rows) {
                o.append(first ? "{" : ",{");
                first = false;
                for (int i = 1; i < args.length; i++) {
                    Object v = r.getField(args[i]);
                    o.append(i > 1 ? "," : "").append(q(args[i])).append(":");
                    o.append(v == null ? "null" : (v instanceof Number ? v.toString() : q(v)));
                }
                o.append("}");
            }
        }
        System.out.println(o.append("]}"));
    }
}
