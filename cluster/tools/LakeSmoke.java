/*
 * Smoke test for the local Fluss cluster, compiled by setup.sh against lib-client
 * (org.apache.fluss:fluss-client). Run it through cluster/lake-smoke.sh.
 *
 *   LakeSmoke <bootstrap> <table> [rows]
 *
 * Prints the server nodes, creates database `fluss` (if missing) and the lake-enabled log table
 * fluss.<table> (3 buckets, 'table.datalake.enabled'='true', 'table.datalake.freshness'='10s'),
 * appends <rows> rows and reads them back with a log scanner. Exit 0 on success.
 */
import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.admin.Admin;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.scanner.log.LogScanner;
import org.apache.fluss.client.table.writer.AppendWriter;
import org.apache.fluss.cluster.ServerNode;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.DatabaseDescriptor;
import org.apache.fluss.metadata.Schema;
import org.apache.fluss.metadata.TableDescriptor;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.row.BinaryString;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.types.DataTypes;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

public final class LakeSmoke {
    private static final int BUCKETS = 3;

    public static void main(String[] args) throws Exception {
        String bootstrap = args.length > 0 ? args[0] : "127.0.0.1:9123";
        String table = args.length > 1 ? args[1] : "smoke_" + System.currentTimeMillis();
        int rows = args.length > 2 ? Integer.parseInt(args[2]) : 10;

        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", bootstrap);
        TablePath path = TablePath.of("fluss", table);
        try (Connection conn = ConnectionFactory.createConnection(conf);
                Admin admin = conn.getAdmin()) {
            for (ServerNode n : admin.getServerNodes().get(30, TimeUnit.SECONDS)) {
                System.out.printf("SERVER_NODE %s id=%d %s:%d%n", n.serverType(), n.id(), n.host(), n.port());
            }
            admin.createDatabase("fluss", DatabaseDescriptor.EMPTY, true).get(30, TimeUnit.SECONDS);

            Schema schema =
                    Schema.newBuilder()
                            .column("id", DataTypes.INT())
                            .column("name", DataTypes.STRING())
                            .column("amount", DataTypes.BIGINT())
                            .column("ts", DataTypes.TIMESTAMP(3))
                            .build();
            TableDescriptor descriptor =
                    TableDescriptor.builder()
                            .schema(schema)
                            .distributedBy(BUCKETS, "id")
                            .property("table.datalake.enabled", "true")
                            .property("table.datalake.freshness", "10s")
                            .build();
            admin.createTable(path, descriptor, false).get(30, TimeUnit.SECONDS);
            System.out.println("CREATED_TABLE " + path);

            try (Table t = conn.getTable(path)) {
                AppendWriter writer = t.newAppend().createWriter();
                long now = System.currentTimeMillis();
                for (int i = 0; i < rows; i++) {
                    writer.append(
                            GenericRow.of(
                                    i,
                                    BinaryString.fromString("name-" + i),
                                    i * 100L,
                                    org.apache.fluss.row.TimestampNtz.fromMillis(now + i)));
                }
                writer.flush();
                System.out.println("WROTE_ROWS " + rows);

                int read = 0;
                long deadline = System.currentTimeMillis() + 30_000;
                try (LogScanner scanner = t.newScan().createLogScanner()) {
                    for (int b = 0; b < BUCKETS; b++) {
                        scanner.subscribeFromBeginning(b);
                    }
                    while (read < rows && System.currentTimeMillis() < deadline) {
                        read += scanner.poll(Duration.ofSeconds(1)).count();
                    }
                }
                System.out.println("READ_ROWS " + read);
                if (read != rows) {
                    System.err.println("expected " + rows + " rows, read " + read);
                    System.exit(1);
                }
            }
        }
    }
}
