/*
 * Switches a running cluster's lake format with AlterClusterConfigs (no restart), so one
 * cluster can hold tables of several lake formats: a table keeps the format (and the
 * table.datalake.<format>.* options) it was created with. Compiled by setup.sh like LakeSmoke.
 *
 *   SetLakeFormat <bootstrap> <format> [key=value ...]
 *
 * Sets datalake.format=<format> and every datalake.<format>.<key>=<value> given, and deletes
 * the dynamic datalake.* options of any other format in the same request (the coordinator
 * refuses a configuration mixing formats). The cluster must not set datalake.* options in
 * server.yaml (start it with DATALAKE_FORMAT=none). Prints the resulting datalake.* entries.
 */
import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.admin.Admin;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.config.cluster.AlterConfig;
import org.apache.fluss.config.cluster.AlterConfigOpType;
import org.apache.fluss.config.cluster.ConfigEntry;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

public final class SetLakeFormat {
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: SetLakeFormat <bootstrap> <format> [key=value ...]");
            System.exit(2);
        }
        String format = args[1];
        String prefix = "datalake." + format + ".";
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", args[0]);
        try (Connection conn = ConnectionFactory.createConnection(conf);
                Admin admin = conn.getAdmin()) {
            List<AlterConfig> changes = new ArrayList<>();
            for (ConfigEntry e : admin.describeClusterConfigs().get(60, TimeUnit.SECONDS)) {
                if (e.key().startsWith("datalake.")
                        && !e.key().equals("datalake.format")
                        && !e.key().startsWith(prefix)
                        && e.source() == ConfigEntry.ConfigSource.DYNAMIC_SERVER_CONFIG) {
                    changes.add(new AlterConfig(e.key(), null, AlterConfigOpType.DELETE));
                }
            }
            changes.add(new AlterConfig("datalake.format", format, AlterConfigOpType.SET));
            for (int i = 2; i < args.length; i++) {
                int eq = args[i].indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("expected key=value, got " + args[i]);
                }
                changes.add(
                        new AlterConfig(
                                prefix + args[i].substring(0, eq),
                                args[i].substring(eq + 1),
                                AlterConfigOpType.SET));
            }
            admin.alterClusterConfigs(changes).get(60, TimeUnit.SECONDS);
            for (ConfigEntry e : admin.describeClusterConfigs().get(60, TimeUnit.SECONDS)) {
                if (e.key().startsWith("datalake.")) {
                    boolean secret = e.key().matches(".*(secret|password|token|access-key).*");
                    System.out.println(
                            "CONFIG " + e.key() + "=" + (secret ? "<redacted>" : e.value()) + " "
                                    + e.source());
                }
            }
        }
    }
}
