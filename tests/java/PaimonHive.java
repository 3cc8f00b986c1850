import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.LockComponent;
import org.apache.hadoop.hive.metastore.api.LockLevel;
import org.apache.hadoop.hive.metastore.api.LockRequest;
import org.apache.hadoop.hive.metastore.api.LockResponse;
import org.apache.hadoop.hive.metastore.api.LockState;
import org.apache.hadoop.hive.metastore.api.LockType;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.options.Options;

/**
 * Paimon tables kept by a Hive metastore (cluster/hive-metastore/; Fluss's
 * datalake.paimon.metastore=hive), changed and inspected as another engine would: Java Paimon's
 * HiveCatalog (paimon-bundle 1.3.1 of Fluss's Paimon plugin, created by CatalogFactory with
 * metastore=hive, uri and warehouse) and the metastore's own client (Hive 4.0.1). Prints JSON
 * objects, one a line.
 *
 *   java -cp <paimon-bundle>:<metastore lib-client/, lib-paimon/ and lib/ jars> PaimonHive <command> <thrift-uri> ...
 *
 *   register <uri> <warehouse> <db> <table> [<key>=<value>...]
 *                      the Paimon table on disk at <warehouse>/<db>.db/<table> (made by a
 *                      filesystem catalog of the same warehouse, as Fluss's coordinator makes it)
 *                      becomes a table of the metastore: database db is created unless the
 *                      metastore has it (Catalog.createDatabase: its location is
 *                      <warehouse>/<db>.db), then HiveCatalog.repairTable, which registers a table
 *                      found in the database's directory (table_type=PAIMON, the storage handler,
 *                      the columns, sd.location <db location>/<table>), or brings a registered
 *                      one's columns and parameters in step with its schema; a partitioned
 *                      table's partitions too when metastore.partitioned-table is set. Further
 *                      arguments are catalog options (lock.enabled=true: Paimon's default takes
 *                      no metastore lock on local files). Prints {"table": "db.table",
 *                      "location": the metastore table's sd.location, "table_type": its
 *                      table_type parameter}. A database the metastore already has elsewhere
 *                      (another location than <warehouse>/<db>.db) is where repairTable looks
 *   hold-lock <uri> <db> <table> <millis> [--stdin]
 *                      takes the metastore's EXCLUSIVE TABLE lock of db.table (lock, then
 *                      check_lock until ACQUIRED, as Paimon's HiveCatalogLock does; at most 60 s),
 *                      prints {"locked": true, "lockid"}, holds it <millis>, unlocks it and prints
 *                      {"unlocked": true}. --stdin: also unlocks as soon as stdin ends, so that
 *                      the process that started this one can release the lock early (closing the
 *                      pipe) and a lock never outlives it: a lock left by a killed JVM stays in
 *                      the metastore (no heartbeat timeouts with its housekeeping threads off)
 *
 * A table's rows: PaimonCheck --hive <uri> <warehouse> <db> <table> <column>... (the same
 * classpath).
 */
public final class PaimonHive {
    /** How long hold-lock waits for a lock another holder has. */
    private static final long ACQUIRE_TIMEOUT_MS = 60_000;

    private static String q(Object s) {
        return s == null
                ? "null"
                : "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    private static IMetaStoreClient client(String uri) throws Exception {
        Configuration conf = new Configuration();
        conf.set("hive.metastore.uris", uri);
        conf.set("metastore.thrift.uris", uri);
        return new HiveMetaStoreClient(conf);
    }

    /** Paimon's HiveCatalog, as CatalogFactory makes it from these options. */
    private static Catalog catalog(String uri, String warehouse, Map<String, String> extra) {
        Options options = new Options();
        options.set("metastore", "hive");
        options.set("uri", uri);
        options.set("warehouse", warehouse);
        extra.forEach(options::set);
        return CatalogFactory.createCatalog(CatalogContext.create(options));
    }

    private static void register(String uri, String warehouse, String db, String table, Map<String, String> extra)
            throws Exception {
        try (Catalog catalog = catalog(uri, warehouse, extra)) {
            catalog.createDatabase(db, true);
            catalog.repairTable(Identifier.create(db, table));
        }
        IMetaStoreClient client = client(uri);
        try {
            org.apache.hadoop.hive.metastore.api.Table t = client.getTable(db, table);
            Map<String, String> parameters = t.getParameters();
            System.out.println("{\"table\":" + q(db + "." + table)
                    + ",\"location\":" + q(t.getSd() == null ? null : t.getSd().getLocation())
                    + ",\"table_type\":" + q(parameters == null ? null : parameters.get("table_type")) + "}");
        } catch (NoSuchObjectException e) {
            throw new IllegalStateException("repairTable left no table " + db + "." + table + " in the metastore", e);
        } finally {
            client.close();
        }
    }

    private static void holdLock(String uri, String db, String table, long millis, boolean stdin) throws Exception {
        IMetaStoreClient client = client(uri);
        try {
            LockComponent component = new LockComponent(LockType.EXCLUSIVE, LockLevel.TABLE, db);
            component.setTablename(table);
            component.unsetOperationType();
            LockRequest request = new LockRequest(List.of(component), System.getProperty("user.name"),
                    InetAddress.getLocalHost().getHostName());
            LockResponse lock = client.lock(request);
            long start = System.currentTimeMillis();
            long sleep = 50;
            while (lock.getState() == LockState.WAITING && System.currentTimeMillis() - start < ACQUIRE_TIMEOUT_MS) {
                Thread.sleep(sleep);
                sleep = Math.min(sleep * 2, 1000);
                lock = client.checkLock(lock.getLockid());
            }
            if (lock.getState() != LockState.ACQUIRED) {
                if (lock.getState() == LockState.WAITING) {
                    client.unlock(lock.getLockid());
                }
                throw new IllegalStateException("no lock of " + db + "." + table + " within "
                        + ACQUIRE_TIMEOUT_MS + " ms: " + lock.getState());
            }
            CountDownLatch released = new CountDownLatch(1);
            if (stdin) {
                Thread reader = new Thread(() -> {
                    byte[] buffer = new byte[256];
                    InputStream in = System.in;
                    try {
                        while (in.read(buffer) >= 0) {
                            // anything written is ignored: only the end counts
                        }
                    } catch (IOException e) {
                        // a broken pipe ends it too
                    }
                    released.countDown();
                }, "stdin");
                reader.setDaemon(true);
                reader.start();
            }
            try {
                System.out.println("{\"locked\":true,\"lockid\":" + lock.getLockid() + "}");
                System.out.flush();
                released.await(millis, TimeUnit.MILLISECONDS);
            } finally {
                client.unlock(lock.getLockid());
            }
            System.out.println("{\"unlocked\":true}");
            System.out.flush();
        } finally {
            client.close();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            throw new IllegalArgumentException("usage: PaimonHive register <thrift-uri> <warehouse> <db> <table> [<key>=<value>...]"
                    + " | hold-lock <thrift-uri> <db> <table> <millis> [--stdin]");
        }
        String command = args[0];
        String uri = args[1];
        switch (command) {
            case "register": {
                if (args.length < 5) {
                    throw new IllegalArgumentException("usage: PaimonHive register <thrift-uri> <warehouse> <db> <table> [<key>=<value>...]");
                }
                Map<String, String> extra = new java.util.LinkedHashMap<>();
                for (int i = 5; i < args.length; i++) {
                    int eq = args[i].indexOf('=');
                    if (eq <= 0) {
                        throw new IllegalArgumentException("not a catalog option <key>=<value>: " + args[i]);
                    }
                    extra.put(args[i].substring(0, eq), args[i].substring(eq + 1));
                }
                register(uri, args[2], args[3], args[4], extra);
                break;
            }
            case "hold-lock": {
                if (args.length < 5) {
                    throw new IllegalArgumentException("usage: PaimonHive hold-lock <thrift-uri> <db> <table> <millis> [--stdin]");
                }
                boolean stdin = args.length > 5 && args[5].equals("--stdin");
                holdLock(uri, args[2], args[3], Long.parseLong(args[4]), stdin);
                break;
            }
            default:
                throw new IllegalArgumentException("unknown command " + command);
        }
    }
}
