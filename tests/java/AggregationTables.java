import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.admin.Admin;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.AggFunction;
import org.apache.fluss.metadata.AggFunctionType;
import org.apache.fluss.metadata.AggFunctions;
import org.apache.fluss.metadata.DatabaseDescriptor;
import org.apache.fluss.metadata.Schema;
import org.apache.fluss.metadata.TableDescriptor;
import org.apache.fluss.metadata.TableInfo;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.shaded.org.roaringbitmap.RoaringBitmap;
import org.apache.fluss.shaded.org.roaringbitmap.longlong.Roaring64Bitmap;
import org.apache.fluss.types.DataTypes;

/**
 * Creates primary-key tables with the `aggregation` merge engine through Fluss's own Java client
 * (fluss-rs cannot declare a column's aggregate function), and serializes roaring bitmaps for
 * the `rbm32` / `rbm64` functions with the RoaringBitmap the Fluss server ships (shaded in
 * fluss-server), so that the test can write them through fluss-rs.
 *
 *   java -cp <lib-client jars>:<fluss-server jar> AggregationTables <bootstrap> <db> <buckets>
 *        <columns> <bitmaps> <table>[;key=value]...
 *
 * <columns>: `;`-separated `name:TYPE[:function[:delimiter]]`, the first the INT-like primary
 * key (no function), TYPE as Fluss parses it (`DECIMAL(12, 2)`), a column without a function
 * gets the engine's default (`last_value_ignore_nulls`). <bitmaps>: how many bitmaps of each
 * width to print. Each table is created lake-enabled with `table.merge-engine=aggregation`,
 * distributed by the key into <buckets> buckets, with the given properties (`table.*` as table
 * properties, anything else as custom properties, such as `paimon.*` for the lake table).
 *
 * Output, one JSON object per line: per table {"table", "columns": [{"name", "type", "agg"}],
 * "properties": {...}, "custom_properties": {...}} as the server reports it (TableInfo), then
 * {"rbm32": [hex...], "rbm64": [hex...]}: bitmap i holds {i, 7 i + 3, 70000 + 11 i} (32 bits)
 * or {i, 2^40 + 5 i, 2^62 + i} (64 bits), serialized as Fluss serializes them (run-optimized).
 */
public final class AggregationTables {
    private static String q(Object s) {
        return "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static String map(Map<String, String> m) {
        StringBuilder o = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, String> e : new TreeMap<>(m).entrySet()) {
            o.append(first ? "" : ",").append(q(e.getKey())).append(":").append(q(e.getValue()));
            first = false;
        }
        return o.append("}").toString();
    }

    private static String hex(byte[] bytes) {
        StringBuilder s = new StringBuilder();
        for (byte b : bytes) {
            s.append(String.format("%02x", b & 0xff));
        }
        return s.toString();
    }

    private static Schema schema(String spec) {
        Schema.Builder b = Schema.newBuilder();
        String key = null;
        for (String column : spec.split(";")) {
            String[] p = column.split(":", 4);
            if (key == null) {
                key = p[0];
            }
            if (p.length < 3 || p[2].isEmpty()) {
                b.column(p[0], DataTypes.parse(p[1]));
                continue;
            }
            AggFunctionType type = AggFunctionType.fromString(p[2]);
            if (type == null) {
                throw new IllegalArgumentException("no aggregate function " + p[2]);
            }
            Map<String, String> params =
                    p.length > 3
                            ? Collections.singletonMap(AggFunctions.PARAM_DELIMITER, p[3])
                            : null;
            b.column(p[0], DataTypes.parse(p[1]), AggFunctions.of(type, params));
        }
        return b.primaryKey(key).build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String db = args[1];
        int buckets = Integer.parseInt(args[2]);
        Schema schema = schema(args[3]);
        int bitmaps = Integer.parseInt(args[4]);
        String key = schema.getPrimaryKeyColumnNames().get(0);

        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", bootstrap);
        try (Connection conn = ConnectionFactory.createConnection(conf);
                Admin admin = conn.getAdmin()) {
            admin.createDatabase(db, DatabaseDescriptor.EMPTY, true).get(60, TimeUnit.SECONDS);
            for (int i = 5; i < args.length; i++) {
                String[] p = args[i].split(";");
                TableDescriptor.Builder d =
                        TableDescriptor.builder()
                                .schema(schema)
                                .distributedBy(buckets, key)
                                .property("table.datalake.enabled", "true")
                                .property("table.merge-engine", "aggregation");
                for (int j = 1; j < p.length; j++) {
                    String[] kv = p[j].split("=", 2);
                    if (kv[0].startsWith("table.")) {
                        d.property(kv[0], kv[1]);
                    } else {
                        d.customProperty(kv[0], kv[1]);
                    }
                }
                TablePath path = TablePath.of(db, p[0]);
                admin.createTable(path, d.build(), false).get(60, TimeUnit.SECONDS);
                TableInfo info = admin.getTableInfo(path).get(60, TimeUnit.SECONDS);
                StringBuilder o = new StringBuilder("{\"table\":").append(q(p[0]));
                o.append(",\"columns\":[");
                boolean first = true;
                for (Schema.Column c : info.getSchema().getColumns()) {
                    o.append(first ? "{" : ",{");
                    first = false;
                    o.append("\"name\":").append(q(c.getName()));
                    o.append(",\"type\":").append(q(c.getDataType().asSummaryString()));
                    AggFunction f = c.getAggFunction().orElse(null);
                    o.append(",\"agg\":").append(f == null ? "null" : q(f.toString()));
                    o.append("}");
                }
                o.append("],\"properties\":").append(map(info.getProperties().toMap()));
                o.append(",\"custom_properties\":").append(map(info.getCustomProperties().toMap()));
                System.out.println(o.append("}"));
            }
        }

        StringBuilder o = new StringBuilder("{\"rbm32\":[");
        for (int i = 0; i < bitmaps; i++) {
            RoaringBitmap b = RoaringBitmap.bitmapOf(i, 7 * i + 3, 70000 + 11 * i);
            b.runOptimize();
            ByteBuffer buffer = ByteBuffer.allocate(b.serializedSizeInBytes());
            b.serialize(buffer);
            o.append(i > 0 ? "," : "").append(q(hex(buffer.array())));
        }
        o.append("],\"rbm64\":[");
        for (int i = 0; i < bitmaps; i++) {
            Roaring64Bitmap b = Roaring64Bitmap.bitmapOf(i, (1L << 40) + 5L * i, (1L << 62) + i);
            b.runOptimize();
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (DataOutputStream out = new DataOutputStream(bytes)) {
                b.serialize(out);
            }
            o.append(i > 0 ? "," : "").append(q(hex(bytes.toByteArray())));
        }
        System.out.println(o.append("]}"));
    }
}
