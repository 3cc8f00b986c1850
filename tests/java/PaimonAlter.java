import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.options.Options;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.utils.StringUtils;

/**
 * Changes a Paimon table the way another engine (or Fluss 1.0's coordinator) would, with Java
 * Paimon (the paimon-bundle FlussLakeTiering runs with) through the filesystem catalog, and
 * prints one JSON object with the table's columns afterwards.
 *
 *   java -cp <paimon-bundle and hadoop jars> PaimonAlter <warehouse> <db> <table> <change>...
 *
 * Changes, applied in order (all of one call in one schema change where Paimon allows):
 *   add:NAME:TYPE             a nullable column at the end (TYPE: INT, BIGINT, STRING, DOUBLE)
 *   first:NAME                move a column to the front
 *   drop:NAME                 drop a column
 *   retype:NAME:TYPE          change a column's type
 *   clean                     recreate the table as Fluss 1.0 creates it (FIP-27): the same
 *                             options, keys and columns without __bucket, __offset, __timestamp.
 *                             Only for a table that holds no snapshot yet.
 */
public final class PaimonAlter {
    private static final List<String> SYSTEM = List.of("__bucket", "__offset", "__timestamp");

    private static org.apache.paimon.types.DataType type(String name) {
        switch (name) {
            case "INT":
                return DataTypes.INT();
            case "BIGINT":
                return DataTypes.BIGINT();
            case "STRING":
                return DataTypes.STRING();
            case "DOUBLE":
                return DataTypes.DOUBLE();
            default:
                throw new IllegalArgumentException("type " + name);
        }
    }

    public static void main(String[] args) throws Exception {
        Options options = new Options();
        options.set("warehouse", args[0]);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        Identifier id = Identifier.create(args[1], args[2]);
        List<SchemaChange> changes = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            String[] c = args[i].split(":");
            switch (c[0]) {
                case "add":
                    changes.add(SchemaChange.addColumn(c[1], type(c[2])));
                    break;
                case "first":
                    changes.add(SchemaChange.updateColumnPosition(SchemaChange.Move.first(c[1])));
                    break;
                case "drop":
                    changes.add(SchemaChange.dropColumn(c[1]));
                    break;
                case "retype":
                    changes.add(SchemaChange.updateColumnType(c[1], type(c[2])));
                    break;
                case "clean":
                    clean(catalog, id);
                    break;
                default:
                    throw new IllegalArgumentException("change " + args[i]);
            }
        }
        if (!changes.isEmpty()) {
            catalog.alterTable(id, changes, false);
        }
        FileStoreTable table = (FileStoreTable) catalog.getTable(id);
        StringBuilder out = new StringBuilder("{\"schema_id\":" + table.schema().id() + ",\"columns\":[");
        List<DataField> fields = table.schema().fields();
        for (int i = 0; i < fields.size(); i++) {
            DataField f = fields.get(i);
            out.append(i == 0 ? "" : ",")
                    .append("{\"id\":").append(f.id())
                    .append(",\"name\":\"").append(f.name())
                    .append("\",\"type\":\"").append(f.type().asSQLString()).append("\"}");
        }
        System.out.println(out.append("]}"));
    }

    /** Drops the table and creates it again from its own schema, minus the system columns. */
    private static void clean(Catalog catalog, Identifier id) throws Exception {
        FileStoreTable table = (FileStoreTable) catalog.getTable(id);
        if (table.snapshotManager().latestSnapshotId() != null) {
            throw new IllegalStateException(id + " already holds snapshots");
        }
        Schema old = table.schema().toSchema();
        Schema.Builder b = Schema.newBuilder();
        for (DataField f : old.fields()) {
            if (!SYSTEM.contains(f.name())) {
                b.column(f.name(), f.type(), f.description());
            }
        }
        b.primaryKey(old.primaryKeys());
        b.partitionKeys(old.partitionKeys());
        // Everything but the location Paimon records itself (the catalog puts the table there).
        Map<String, String> options = new java.util.HashMap<>(old.options());
        options.remove("path");
        b.options(options);
        if (!StringUtils.isNullOrWhitespaceOnly(old.comment())) {
            b.comment(old.comment());
        }
        catalog.dropTable(id, false);
        catalog.createTable(id, b.build(), false);
    }
}
