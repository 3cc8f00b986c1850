import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowType;

/**
 * Reads a Paimon table with Java Paimon (the paimon-bundle FlussLakeTiering runs with) through
 * the filesystem catalog and prints one JSON object: the latest snapshot (id, commit user,
 * properties) and the merged rows of the given columns at that snapshot. Java's manifest and
 * data file readers are strict, so anything the Rust plugin wrote that Java cannot decode
 * fails here.
 *
 *   java -cp <paimon-bundle and hadoop jars> PaimonCheck <warehouse> <db> <table> <column>...
 *   java -cp <paimon-bundle>:<hive metastore client jars> PaimonCheck --hive <thrift-uri> <warehouse> <db> <table> <column>...
 *   java -cp <paimon-bundle and hadoop jars> PaimonCheck --rest <uri> <token> <warehouse name> <db> <table> <column>...
 *
 * --hive loads the table from the Hive metastore at <thrift-uri> instead (Java Paimon's
 * HiveCatalog: metastore=hive, uri, warehouse; the table's files at the metastore table's
 * location; cluster/hive-metastore/, whose lib-client/, lib-paimon/ and lib/ jars must follow
 * paimon-bundle on the classpath). CatalogFactory finds the catalog by its options, so this
 * class compiles without the metastore's jars.
 *
 * --rest loads the table through Paimon's REST catalog at <uri> (Java Paimon's RESTCatalog:
 * metastore=rest, uri, warehouse = the catalog's warehouse name, token.provider=bear, token):
 * the latest snapshot is the catalog's answer, as every reader of such a table sees it.
 */
public final class PaimonCheck {
    private static String q(Object s) {
        return "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    /**
     * A value in the tests' canonical JSON: numbers and booleans as they are, strings quoted,
     * decimals as their plain text quoted, timestamps as epoch microseconds, arrays as lists,
     * maps as lists of [key, value] pairs, rows as objects of their fields.
     */
    private static String json(Object v, DataType t) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte
                || v instanceof Boolean) {
            return v.toString();
        }
        if (v instanceof Double || v instanceof Float) {
            return v.toString();
        }
        if (v instanceof BinaryString) {
            return q(v.toString());
        }
        if (v instanceof Decimal) {
            return q(((Decimal) v).toBigDecimal().toPlainString());
        }
        if (v instanceof Timestamp) {
            return Long.toString(((Timestamp) v).toMicros());
        }
        if (t instanceof ArrayType && v instanceof InternalArray) {
            DataType e = ((ArrayType) t).getElementType();
            return array((InternalArray) v, e);
        }
        if (t instanceof MapType && v instanceof InternalMap) {
            InternalMap m = (InternalMap) v;
            MapType mt = (MapType) t;
            InternalArray.ElementGetter k = InternalArray.createElementGetter(mt.getKeyType());
            InternalArray.ElementGetter val = InternalArray.createElementGetter(mt.getValueType());
            List<String> pairs = new ArrayList<>();
            for (int i = 0; i < m.size(); i++) {
                pairs.add("[" + json(k.getElementOrNull(m.keyArray(), i), mt.getKeyType()) + ","
                        + json(val.getElementOrNull(m.valueArray(), i), mt.getValueType()) + "]");
            }
            return "[" + String.join(",", pairs) + "]";
        }
        if (t instanceof RowType && v instanceof InternalRow) {
            RowType rt = (RowType) t;
            List<String> fields = new ArrayList<>();
            for (int i = 0; i < rt.getFieldCount(); i++) {
                DataType ft = rt.getTypeAt(i);
                Object f = InternalRow.createFieldGetter(ft, i).getFieldOrNull((InternalRow) v);
                fields.add(q(rt.getFieldNames().get(i)) + ":" + json(f, ft));
            }
            return "{" + String.join(",", fields) + "}";
        }
        return q(v);
    }

    private static String array(InternalArray a, DataType e) {
        InternalArray.ElementGetter g = InternalArray.createElementGetter(e);
        List<String> items = new ArrayList<>();
        for (int i = 0; i < a.size(); i++) {
            items.add(json(g.getElementOrNull(a, i), e));
        }
        return "[" + String.join(",", items) + "]";
    }

    public static void main(String[] argv) throws Exception {
        Options options = new Options();
        boolean hive = argv.length > 1 && argv[0].equals("--hive");
        boolean rest = argv.length > 2 && argv[0].equals("--rest");
        if (hive) {
            options.set("metastore", "hive");
            options.set("uri", argv[1]);
        }
        if (rest) {
            options.set("metastore", "rest");
            options.set("uri", argv[1]);
            options.set("token.provider", "bear");
            options.set("token", argv[2]);
        }
        String[] args =
                hive ? java.util.Arrays.copyOfRange(argv, 2, argv.length)
                        : rest ? java.util.Arrays.copyOfRange(argv, 3, argv.length) : argv;
        options.set("warehouse", args[0]);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        FileStoreTable table = (FileStoreTable) catalog.getTable(Identifier.create(args[1], args[2]));
        RowType type = table.rowType();
        List<Integer> positions = new ArrayList<>();
        List<InternalRow.FieldGetter> getters = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            int pos = type.getFieldIndex(args[i]);
            if (pos < 0) {
                throw new IllegalArgumentException("no column " + args[i] + " in " + type);
            }
            positions.add(pos);
            getters.add(InternalRow.createFieldGetter(type.getTypeAt(pos), pos));
        }
        StringBuilder o = new StringBuilder("{");
        Snapshot snapshot = table.snapshotManager().latestSnapshot();
        if (snapshot == null) {
            o.append("\"snapshot\":null");
        } else {
            o.append("\"snapshot\":").append(snapshot.id());
            o.append(",\"commit_user\":").append(q(snapshot.commitUser()));
            o.append(",\"properties\":{");
            List<String> props = new ArrayList<>();
            if (snapshot.properties() != null) {
                for (Map.Entry<String, String> e : snapshot.properties().entrySet()) {
                    props.add(q(e.getKey()) + ":" + q(e.getValue()));
                }
            }
            o.append(String.join(",", props)).append("}");
        }
        o.append(",\"rows\":[");
        ReadBuilder rb = table.newReadBuilder();
        List<String> rows = new ArrayList<>();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(rb.newScan().plan())) {
            reader.forEachRemaining(row -> {
                List<String> cells = new ArrayList<>();
                for (int i = 0; i < getters.size(); i++) {
                    DataType t = type.getTypeAt(positions.get(i));
                    cells.add(q(args[i + 3]) + ":" + json(getters.get(i).getFieldOrNull(row), t));
                }
                rows.add("{" + String.join(",", cells) + "}");
            });
        }
        o.append(String.join(",", rows)).append("]}");
        System.out.println(o);
        catalog.close();
    }
}
