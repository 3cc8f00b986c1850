import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.UpdateSchema;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * Changes a Hadoop-catalog Iceberg table the way another engine (or Fluss 1.0's coordinator)
 * would, with the Iceberg jars of Fluss's own Iceberg plugin, and prints one JSON object with
 * the table's columns (name and field id) afterwards.
 *
 *   java -cp <Fluss's Iceberg plugin jars> IcebergAlter <table-dir> <change>...
 *
 * Changes, applied in order in one schema update:
 *   add:NAME:TYPE             a nullable column at the end (TYPE: int, long, string, double)
 *   add-before-bucket:NAME:TYPE  a nullable column placed before __bucket, as Fluss 1.0's
 *                             coordinator adds a Fluss ADD COLUMN to a table with system columns
 *   first:NAME                move a column to the front
 *   drop:NAME                 drop a column
 *   retype:NAME:TYPE          promote a column's type (int to long)
 * or, alone:
 *   clean                     recreate the table as Fluss 1.0 creates it (FIP-27): the same
 *                             properties and columns without __bucket, __offset, __timestamp,
 *                             partitioned by identity(partition keys) then bucket(N, bucket key);
 *                             a log table without bucket key only by its partition keys; unsorted.
 *                             Only for a table without snapshots.
 */
public final class IcebergAlter {
    private static final List<String> SYSTEM = List.of("__bucket", "__offset", "__timestamp");

    private static Type.PrimitiveType type(String name) {
        switch (name) {
            case "int":
                return Types.IntegerType.get();
            case "long":
                return Types.LongType.get();
            case "string":
                return Types.StringType.get();
            case "double":
                return Types.DoubleType.get();
            default:
                throw new IllegalArgumentException("type " + name);
        }
    }

    public static void main(String[] args) throws Exception {
        HadoopTables tables = new HadoopTables(new Configuration());
        String location = args[0];
        Table table = tables.load(location);
        if (args.length == 2 && args[1].equals("clean")) {
            table = clean(tables, table, location);
        } else {
            UpdateSchema update = table.updateSchema();
            for (int i = 1; i < args.length; i++) {
                String[] c = args[i].split(":");
                switch (c[0]) {
                    case "add":
                        update.addColumn(c[1], type(c[2]));
                        break;
                    case "add-before-bucket":
                        update.addColumn(c[1], type(c[2]));
                        update.moveBefore(c[1], "__bucket");
                        break;
                    case "first":
                        update.moveFirst(c[1]);
                        break;
                    case "drop":
                        update.deleteColumn(c[1]);
                        break;
                    case "retype":
                        update.updateColumn(c[1], type(c[2]));
                        break;
                    default:
                        throw new IllegalArgumentException("change " + args[i]);
                }
            }
            update.commit();
            table.refresh();
        }
        StringBuilder out =
                new StringBuilder("{\"schema_id\":" + table.schema().schemaId() + ",\"columns\":[");
        List<Types.NestedField> fields = table.schema().columns();
        for (int i = 0; i < fields.size(); i++) {
            Types.NestedField f = fields.get(i);
            out.append(i == 0 ? "" : ",")
                    .append("{\"id\":").append(f.fieldId())
                    .append(",\"name\":\"").append(f.name())
                    .append("\",\"type\":\"").append(f.type()).append("\"}");
        }
        System.out.println(out.append("]}"));
    }

    /** Drops the table's files and creates it again without the system columns. */
    private static Table clean(HadoopTables tables, Table table, String location) {
        if (table.currentSnapshot() != null) {
            throw new IllegalStateException(location + " already holds snapshots");
        }
        List<Types.NestedField> columns = new ArrayList<>();
        for (Types.NestedField f : table.schema().columns()) {
            if (!SYSTEM.contains(f.name())) {
                columns.add(f);
            }
        }
        Schema schema = new Schema(columns, table.schema().identifierFieldIds());
        PartitionSpec.Builder spec = PartitionSpec.builderFor(schema);
        for (PartitionField p : table.spec().fields()) {
            String source = table.schema().findColumnName(p.sourceId());
            String transform = p.transform().toString();
            if (source.equals("__bucket")) {
                continue;
            } else if (transform.equals("identity")) {
                spec.identity(source);
            } else if (transform.startsWith("bucket[")) {
                int n = Integer.parseInt(transform.substring(7, transform.length() - 1));
                spec.bucket(source, n);
            } else {
                throw new IllegalStateException("partition transform " + transform);
            }
        }
        // Fluss sorts legacy tables by __offset; 1.0's clean tables are unsorted.
        for (org.apache.iceberg.SortField f : table.sortOrder().fields()) {
            if (!table.schema().findColumnName(f.sourceId()).equals("__offset")) {
                throw new IllegalStateException(location + " is sorted by " + f);
            }
        }
        Map<String, String> properties = table.properties();
        tables.dropTable(location, true);
        return tables.create(schema, spec.build(), SortOrder.unsorted(), properties, location);
    }
}
