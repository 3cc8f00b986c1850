import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;

/**
 * Reads the rows of Iceberg tables with Java Iceberg's generic reader (the version Fluss's
 * Iceberg plugin ships), deletes applied as Java applies them, and prints one JSON object per
 * table: {"table", "snapshot", "rows": [{column: value, ...}]} with the given columns, in the
 * tests' canonical JSON: numbers, booleans and strings as they are, decimals as their plain
 * text quoted, timestamps as epoch microseconds, lists as lists, maps as lists of [key, value]
 * pairs, structs as objects of their fields.
 *
 *   java -cp <iceberg plugin jars> IcebergRows <table-dir> <column>...
 *   java -cp <iceberg plugin jars> IcebergRows --rest <uri> <namespace.table> <column>...
 *   java -cp <iceberg plugin jars>:<hive metastore client jars> IcebergRows --hive <thrift-uri> <db.table> <column>...
 *
 * --rest loads the table from the Iceberg REST catalog at <uri> (Java Iceberg's RESTCatalog, which
 * Fluss's Iceberg plugin bundles; cluster/iceberg-rest/) instead of reading a Hadoop table's
 * directory; "table" is then <namespace.table>. --hive loads it from the Hive metastore at
 * <thrift-uri> (Java Iceberg's HiveCatalog: the table's metadata_location; cluster/hive-metastore/,
 * whose lib-client/ and lib/ jars must follow Iceberg's on the classpath); both catalogs are
 * loaded by name (CatalogUtil), so this class compiles without the metastore's jars. Tables on
 * the test S3 server are read through
 * Hadoop's S3A (in Fluss's Iceberg plugin directory with cluster/setup.sh WITH_S3=1), with the
 * S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY and S3_SECRET_KEY of the environment.
 */
public final class IcebergRows {
    private static String q(Object s) {
        return "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    /** Bytes (binary and fixed) as the readers print them: quoted lowercase hex. */
    private static String hex(byte[] bytes) {
        StringBuilder o = new StringBuilder("\"");
        for (byte b : bytes) {
            o.append(String.format("%02x", b));
        }
        return o.append("\"").toString();
    }

    private static String json(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof java.math.BigDecimal) {
            return q(((java.math.BigDecimal) v).toPlainString());
        }
        if (v instanceof Number || v instanceof Boolean) {
            return v.toString();
        }
        if (v instanceof java.time.LocalDateTime) {
            java.time.Instant i = ((java.time.LocalDateTime) v).toInstant(java.time.ZoneOffset.UTC);
            return Long.toString(i.getEpochSecond() * 1_000_000L + i.getNano() / 1000);
        }
        if (v instanceof java.time.OffsetDateTime) {
            java.time.Instant i = ((java.time.OffsetDateTime) v).toInstant();
            return Long.toString(i.getEpochSecond() * 1_000_000L + i.getNano() / 1000);
        }
        if (v instanceof java.nio.ByteBuffer) {
            java.nio.ByteBuffer b = ((java.nio.ByteBuffer) v).duplicate();
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            return hex(bytes);
        }
        if (v instanceof byte[]) {
            return hex((byte[]) v);
        }
        if (v instanceof Record) {
            Record r = (Record) v;
            StringBuilder o = new StringBuilder("{");
            java.util.List<Types.NestedField> fields = r.struct().fields();
            for (int i = 0; i < fields.size(); i++) {
                o.append(i > 0 ? "," : "").append(q(fields.get(i).name())).append(":");
                o.append(json(r.get(i)));
            }
            return o.append("}").toString();
        }
        if (v instanceof java.util.List) {
            StringBuilder o = new StringBuilder("[");
            boolean first = true;
            for (Object e : (java.util.List<?>) v) {
                o.append(first ? "" : ",").append(json(e));
                first = false;
            }
            return o.append("]").toString();
        }
        if (v instanceof java.util.Map) {
            // Pairs in the order of their keys' text: a map read back has no order of its own.
            java.util.TreeMap<String, String> pairs = new java.util.TreeMap<>();
            for (java.util.Map.Entry<?, ?> e : ((java.util.Map<?, ?>) v).entrySet()) {
                pairs.put(json(e.getKey()), json(e.getValue()));
            }
            StringBuilder o = new StringBuilder("[");
            boolean first = true;
            for (java.util.Map.Entry<String, String> e : pairs.entrySet()) {
                o.append(first ? "[" : ",[").append(e.getKey()).append(",").append(e.getValue()).append("]");
                first = false;
            }
            return o.append("]").toString();
        }
        return q(v);
    }

    /** Hadoop's configuration: S3A for s3:// and s3a:// when the environment names an S3 server. */
    private static Configuration hadoopConf() {
        Configuration conf = new Configuration();
        String endpoint = System.getenv("S3_ENDPOINT");
        if (endpoint != null && !endpoint.isEmpty()) {
            conf.set("fs.s3.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem");
            conf.set("fs.s3a.endpoint", endpoint);
            conf.set("fs.s3a.endpoint.region", System.getenv("S3_REGION"));
            conf.set("fs.s3a.access.key", System.getenv("S3_ACCESS_KEY"));
            conf.set("fs.s3a.secret.key", System.getenv("S3_SECRET_KEY"));
            conf.set("fs.s3a.path.style.access", "true");
            conf.set("fs.s3a.connection.ssl.enabled", String.valueOf(endpoint.startsWith("https:")));
        }
        return conf;
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && (args[0].equals("--rest") || args[0].equals("--hive"))) {
            String type = args[0].substring(2);
            Catalog catalog = CatalogUtil.buildIcebergCatalog(type, java.util.Map.of(
                    CatalogUtil.ICEBERG_CATALOG_TYPE, type, CatalogProperties.URI, args[1]), hadoopConf());
            try {
                print(catalog.loadTable(TableIdentifier.parse(args[2])), args[2],
                        java.util.Arrays.copyOfRange(args, 3, args.length));
            } finally {
                if (catalog instanceof AutoCloseable) {
                    ((AutoCloseable) catalog).close();
                }
            }
            return;
        }
        print(new HadoopTables(hadoopConf()).load(args[0]), args[0],
                java.util.Arrays.copyOfRange(args, 1, args.length));
    }

    /** Prints the table's rows: {"table": name, "snapshot", "rows"} with the given columns. */
    private static void print(Table t, String name, String[] columns) throws Exception {
        StringBuilder o = new StringBuilder("{\"table\":").append(q(name));
        o.append(",\"snapshot\":").append(t.currentSnapshot() == null ? "null" : t.currentSnapshot().snapshotId());
        o.append(",\"rows\":[");
        boolean first = true;
        try (CloseableIterable<Record> rows = IcebergGenerics.read(t).build()) {
            for (Record r : rows) {
                o.append(first ? "{" : ",{");
                first = false;
                for (int i = 0; i < columns.length; i++) {
                    Object v = r.getField(columns[i]);
                    o.append(i > 0 ? "," : "").append(q(columns[i])).append(":");
                    o.append(json(v));
                }
                o.append("}");
            }
        }
        System.out.println(o.append("]}"));
    }
}
