/*
 * Creates a set of lake-enabled Fluss tables covering the table shapes a lake writer must handle
 * and prints what the server reports for each (TableInfo, properties, custom properties), so the
 * lake table the coordinator created for it can be inspected. Compiled by setup.sh against
 * lib-client like LakeSmoke.
 *
 *   CreateTables <bootstrap> [database] [prefix]        defaults: 127.0.0.1:9123 fluss ""
 *
 * Tables (all 'table.datalake.enabled'='true', 'table.datalake.freshness'='10s'):
 *   <prefix>log_types   log table, one column per scalar type, 3 buckets, no bucket key
 *   <prefix>log_bucketed log table, bucket key id INT, 3 buckets
 *   <prefix>log_part    log table partitioned by dt STRING (auto-partition off), partition dt=2024-01-01
 *   <prefix>pk          PK table, primary key id INT, 2 buckets
 *   <prefix>pk_part     partitioned PK table, primary key (dt, id), partitioned by dt, partition dt=2024-01-01
 * Output: one block per table, lines "KEY value" (TABLE_INFO, PROPERTY k=v, CUSTOM_PROPERTY k=v,
 * COLUMN id name type). A table the server refuses (e.g. PK tables with datalake.format=lance) is
 * reported as "CREATE_FAILED <path> <exception>: <message>" (plus "CAUSE ..." lines) and the other
 * tables are still created. Exit 0 if every table was created, 1 otherwise. Existing tables are
 * reused (ignoreIfExists).
 */
import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.admin.Admin;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.DatabaseDescriptor;
import org.apache.fluss.metadata.PartitionInfo;
import org.apache.fluss.metadata.PartitionSpec;
import org.apache.fluss.metadata.Schema;
import org.apache.fluss.metadata.TableDescriptor;
import org.apache.fluss.metadata.TableInfo;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.types.DataTypes;

import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

public final class CreateTables {
    private static final String PARTITION = "2024-01-01";
    private static int failures = 0;

    public static void main(String[] args) throws Exception {
        String bootstrap = args.length > 0 ? args[0] : "127.0.0.1:9123";
        String db = args.length > 1 ? args[1] : "fluss";
        String prefix = args.length > 2 ? args[2] : "";

        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", bootstrap);
        try (Connection conn = ConnectionFactory.createConnection(conf);
                Admin admin = conn.getAdmin()) {
            admin.createDatabase(db, DatabaseDescriptor.EMPTY, true).get(30, TimeUnit.SECONDS);

            Schema types =
                    Schema.newBuilder()
                            .column("c_int", DataTypes.INT())
                            .column("c_bigint", DataTypes.BIGINT())
                            .column("c_string", DataTypes.STRING())
                            .column("c_double", DataTypes.DOUBLE())
                            .column("c_boolean", DataTypes.BOOLEAN())
                            .column("c_decimal", DataTypes.DECIMAL(10, 2))
                            .column("c_date", DataTypes.DATE())
                            .column("c_ts", DataTypes.TIMESTAMP(6))
                            .column("c_ts_ltz", DataTypes.TIMESTAMP_LTZ(3))
                            .column("c_bytes", DataTypes.BYTES())
                            .column("c_float", DataTypes.FLOAT())
                            .column("c_tinyint", DataTypes.TINYINT())
                            .column("c_smallint", DataTypes.SMALLINT())
                            .build();
            create(admin, TablePath.of(db, prefix + "log_types"), lake().schema(types).distributedBy(3), false);

            Schema bucketed =
                    Schema.newBuilder()
                            .column("id", DataTypes.INT())
                            .column("name", DataTypes.STRING())
                            .column("amount", DataTypes.BIGINT())
                            .build();
            create(admin, TablePath.of(db, prefix + "log_bucketed"),
                    lake().schema(bucketed).distributedBy(3, "id"), false);

            Schema logPart =
                    Schema.newBuilder()
                            .column("id", DataTypes.INT())
                            .column("name", DataTypes.STRING())
                            .column("dt", DataTypes.STRING())
                            .build();
            create(admin, TablePath.of(db, prefix + "log_part"),
                    lake().schema(logPart).distributedBy(3).partitionedBy("dt")
                            .property("table.auto-partition.enabled", "false"),
                    true);

            Schema pk =
                    Schema.newBuilder()
                            .column("id", DataTypes.INT().copy(false))
                            .column("name", DataTypes.STRING())
                            .column("amount", DataTypes.BIGINT())
                            .column("price", DataTypes.DECIMAL(10, 2))
                            .primaryKey("id")
                            .build();
            create(admin, TablePath.of(db, prefix + "pk"), lake().schema(pk).distributedBy(2), false);

            Schema pkPart =
                    Schema.newBuilder()
                            .column("dt", DataTypes.STRING().copy(false))
                            .column("id", DataTypes.INT().copy(false))
                            .column("name", DataTypes.STRING())
                            .column("amount", DataTypes.BIGINT())
                            .primaryKey("dt", "id")
                            .build();
            create(admin, TablePath.of(db, prefix + "pk_part"),
                    lake().schema(pkPart).distributedBy(2).partitionedBy("dt")
                            .property("table.auto-partition.enabled", "false"),
                    true);
        }
        if (failures > 0) {
            System.out.println("FAILED " + failures + " table(s)");
            System.exit(1);
        }
    }

    private static TableDescriptor.Builder lake() {
        return TableDescriptor.builder()
                .property("table.datalake.enabled", "true")
                .property("table.datalake.freshness", "10s");
    }

    private static void create(Admin admin, TablePath path, TableDescriptor.Builder builder, boolean partitioned)
            throws Exception {
        try {
            admin.createTable(path, builder.build(), true).get(60, TimeUnit.SECONDS);
            if (partitioned) {
                admin.createPartition(path, new PartitionSpec(Collections.singletonMap("dt", PARTITION)), true)
                        .get(60, TimeUnit.SECONDS);
            }
        } catch (ExecutionException e) {
            failures++;
            Throwable t = e.getCause() != null ? e.getCause() : e;
            System.out.println("== TABLE " + path);
            System.out.println("CREATE_FAILED " + path + " " + t.getClass().getName() + ": " + t.getMessage());
            for (Throwable c = t.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
                System.out.println("CAUSE " + c.getClass().getName() + ": " + c.getMessage());
            }
            return;
        }
        TableInfo info = admin.getTableInfo(path).get(30, TimeUnit.SECONDS);
        System.out.println("== TABLE " + path);
        System.out.println("TABLE_ID " + info.getTableId());
        System.out.println("SCHEMA_ID " + info.getSchemaId());
        System.out.println("PRIMARY_KEYS " + info.getPrimaryKeys());
        System.out.println("BUCKET_KEYS " + info.getBucketKeys() + " default=" + info.isDefaultBucketKey());
        System.out.println("NUM_BUCKETS " + info.getNumBuckets());
        System.out.println("PARTITION_KEYS " + info.getPartitionKeys());
        for (Schema.Column c : info.getSchema().getColumns()) {
            System.out.println("COLUMN " + c.getColumnId() + " " + c.getName() + " " + c.getDataType());
        }
        for (Map.Entry<String, String> e : new TreeMap<>(info.getProperties().toMap()).entrySet()) {
            System.out.println("PROPERTY " + e.getKey() + "=" + e.getValue());
        }
        for (Map.Entry<String, String> e : new TreeMap<>(info.getCustomProperties().toMap()).entrySet()) {
            System.out.println("CUSTOM_PROPERTY " + e.getKey() + "=" + e.getValue());
        }
        if (partitioned) {
            for (PartitionInfo p : admin.listPartitionInfos(path).get(30, TimeUnit.SECONDS)) {
                System.out.println("PARTITION " + p);
            }
        }
        System.out.println("TABLE_INFO " + info);
    }
}
