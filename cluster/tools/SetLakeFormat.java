/*
 * Switches a running cluster's lake format with AlterClusterConfigs (no restart), so one
 * cluster can hold tables of several lake formats: a table keeps the format (and the
 * table.datalake.<format>.* options) it was created with. Compiled by setup.sh like LakeSmoke.
 *
 *   SetLakeFormat <bootstrap> <format> [key=value ...]
 *
 * Sets datalake.format=<format> and every datalake.<format>.<key>=<value> given, and deletes
 * every other dynamic datalake.* option (the coordinator refuses a configuration mixing
 * formats). Over earlier lake settings this takes two requests (see below), so that new options
 * of the format already set (iceberg on a Hadoop catalog -> on a REST catalog) apply too. The cluster
 * must not set datalake.* options in server.yaml (start it with DATALAKE_FORMAT=none). Prints
 * the resulting datalake.* entries.
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
        java.util.Map<String, String> wanted = new java.util.TreeMap<>();
        wanted.put("datalake.format", format);
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected key=value, got " + args[i]);
            }
            wanted.put(prefix + args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        try (Connection conn = ConnectionFactory.createConnection(conf);
                Admin admin = conn.getAdmin()) {
            java.util.Map<String, String> current = new java.util.TreeMap<>();
            for (ConfigEntry e : admin.describeClusterConfigs().get(60, TimeUnit.SECONDS)) {
                if (e.key().startsWith("datalake.")
                        && e.source() == ConfigEntry.ConfigSource.DYNAMIC_SERVER_CONFIG) {
                    current.put(e.key(), e.value());
                }
            }
            // Fluss 0.9.1 builds the servers' new configuration from the static one plus only
            // the entries a request changes (DynamicServerConfig.buildConfigMap), and rebuilds
            // the lake catalog only when datalake.format changes: a request changing a format's
            // options alone leaves the coordinator without datalake.format (tables are then
            // refused as "the Fluss cluster doesn't enable datalake tables"), and what it
            // describes afterwards is not what the servers use. So every dynamic lake setting is
            // deleted first, and the new ones are all set by the second request.
            if (!current.isEmpty()) {
                List<AlterConfig> reset = new ArrayList<>();
                for (String key : current.keySet()) {
                    reset.add(new AlterConfig(key, null, AlterConfigOpType.DELETE));
                }
                admin.alterClusterConfigs(reset).get(60, TimeUnit.SECONDS);
                current.clear();
            }
            List<AlterConfig> changes = new ArrayList<>();
            for (String key : current.keySet()) {
                if (!wanted.containsKey(key)) {
                    changes.add(new AlterConfig(key, null, AlterConfigOpType.DELETE));
                }
            }
            for (java.util.Map.Entry<String, String> e : wanted.entrySet()) {
                changes.add(new AlterConfig(e.getKey(), e.getValue(), AlterConfigOpType.SET));
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
