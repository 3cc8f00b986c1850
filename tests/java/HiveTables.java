import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.AlreadyExistsException;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.hive.HiveCatalog;

/**
 * Iceberg tables kept by a Hive metastore (cluster/hive-metastore/), changed and inspected as
 * another engine would: Java Iceberg's HiveCatalog (iceberg-hive-metastore 1.10.1, the Iceberg of
 * Fluss's Iceberg plugin) and the metastore's own client (Hive 4.0.1). Prints one JSON object.
 *
 *   java -cp <iceberg plugin jars>:<metastore lib-client/ and lib/ jars> HiveTables <command> <thrift-uri> <db> <table> ...
 *
 *   register <uri> <db> <table> <metadata-file>  the database is created if missing (in the
 *                                          metastore's warehouse), then the table is registered
 *                                          with that metadata file as its current one
 *                                          (HiveCatalog.registerTable): {"table", "metadata_location"}
 *   rival <uri> <db> <table> <key> <value> [--no-lock]
 *                                          a table property set through HiveCatalog, as another
 *                                          engine's commit: {"table", "metadata_location"} after it.
 *                                          HiveCatalog's default takes a metastore lock for the
 *                                          commit, checks the table's metadata_location under it
 *                                          and alters the table without an expected parameter;
 *                                          --no-lock (iceberg.engine.hive.lock-enabled=false)
 *                                          alters it with expected_parameter_key/value instead
 *   pointer <uri> <db> <table>             the metastore table's metadata_location parameter, read
 *                                          with the metastore client (get_table):
 *                                          {"table", "metadata_location"}, null without the table
 *                                          or the parameter
 *
 * A table's rows: IcebergRows --hive <uri> <db.table> <column>... (the same classpath).
 */
public final class HiveTables {
    private static String q(Object s) {
        return s == null
                ? "null"
                : "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    private static void print(String db, String table, String metadataLocation) {
        System.out.println("{\"table\":" + q(db + "." + table) + ",\"metadata_location\":" + q(metadataLocation) + "}");
    }

    /**
     * Hadoop's configuration naming the metastore (hive.metastore.uris, as HiveCatalog sets it).
     * iceberg.hive.table-property-max-size=0: no copy of the current snapshot's id, summary and
     * the schema in the metastore table's parameters. iceberg-hive-metastore writes the summary
     * with JsonUtil.mapper(), built against plain Jackson, and Fluss's Iceberg plugin relocates
     * Jackson (org.apache.iceberg.shaded.com.fasterxml), so a commit of a table with a snapshot
     * fails with NoSuchMethodError otherwise.
     */
    private static Configuration conf(String uri, boolean lock) {
        Configuration conf = new Configuration();
        conf.set("hive.metastore.uris", uri);
        conf.set("metastore.thrift.uris", uri);
        conf.setLong("iceberg.hive.table-property-max-size", 0);
        if (!lock) {
            conf.set("iceberg.engine.hive.lock-enabled", "false");
        }
        return conf;
    }

    private static HiveCatalog catalog(String uri, boolean lock) {
        HiveCatalog catalog = new HiveCatalog();
        catalog.setConf(conf(uri, lock));
        catalog.initialize("hive", Map.of(CatalogProperties.URI, uri));
        return catalog;
    }

    private static String metadataLocation(String uri, String db, String table) throws Exception {
        IMetaStoreClient client = new HiveMetaStoreClient(conf(uri, true));
        try {
            Map<String, String> parameters = client.getTable(db, table).getParameters();
            return parameters == null ? null : parameters.get("metadata_location");
        } catch (NoSuchObjectException e) {
            return null;
        } finally {
            client.close();
        }
    }

    /**
     * Database db unless it exists, with no location of its own: the metastore puts it in its
     * warehouse (<warehouse>/<db>.db), where HiveCatalog.createNamespace would need the
     * warehouse's location from this side.
     */
    private static void createDatabase(String uri, String db) throws Exception {
        IMetaStoreClient client = new HiveMetaStoreClient(conf(uri, true));
        try {
            client.getDatabase(db);
        } catch (NoSuchObjectException missing) {
            Database database = new Database();
            database.setName(db);
            try {
                client.createDatabase(database);
            } catch (AlreadyExistsException raced) {
                // created meanwhile by another client: as wanted
            }
        } finally {
            client.close();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            throw new IllegalArgumentException("usage: HiveTables register|rival|pointer <thrift-uri> <db> <table> ...");
        }
        String command = args[0];
        String uri = args[1];
        String db = args[2];
        String table = args[3];
        switch (command) {
            case "register": {
                createDatabase(uri, db);
                catalog(uri, true).registerTable(TableIdentifier.of(db, table), args[4]);
                print(db, table, metadataLocation(uri, db, table));
                break;
            }
            case "rival": {
                boolean lock = !(args.length > 6 && args[6].equals("--no-lock"));
                Table t = catalog(uri, lock).loadTable(TableIdentifier.of(db, table));
                t.updateProperties().set(args[4], args[5]).commit();
                print(db, table, metadataLocation(uri, db, table));
                break;
            }
            case "pointer":
                print(db, table, metadataLocation(uri, db, table));
                break;
            default:
                throw new IllegalArgumentException("unknown command " + command);
        }
    }
}
