/*
 * Apache Iceberg's REST catalog test server (iceberg-open-api's test fixture RESTCatalogServer: a
 * JDBC catalog behind iceberg-core's RESTCatalogAdapter and RESTCatalogServlet), listening on one
 * address only: the stock server's Jetty binds every interface. Compiled and started by
 * cluster/iceberg-rest/setup.sh and start.sh.
 *
 * Configured as RESTCatalogServer is: every CATALOG_<NAME> environment variable is the catalog
 * property <name> ("__" -> "-", "_" -> ".", lower case; RCKUtils.environmentCatalogConfig), e.g.
 * CATALOG_URI=jdbc:sqlite:/dir/catalog.db, CATALOG_WAREHOUSE=/dir/warehouse,
 * CATALOG_REST_PORT=8181, CATALOG_INCLUDE__CREDENTIALS=true (a table's S3 keys in its load
 * response, as the fixture's adapter hands them out). Beyond it: rest.host (CATALOG_REST_HOST),
 * 127.0.0.1 unless set; the JDBC catalog gets one connection (clients=1), so SQLite never sees two
 * writers at once. Prints "READY http://<host>:<port>" once it answers; catalog properties are
 * never printed (they may hold S3 keys).
 */
package org.apache.iceberg.rest;

import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.util.PropertyUtil;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.gzip.GzipHandler;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public final class LoopbackRESTCatalogServer {
    private LoopbackRESTCatalogServer() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> props = new HashMap<>(RCKUtils.environmentCatalogConfig());
        for (String required : new String[] {CatalogProperties.URI, CatalogProperties.WAREHOUSE_LOCATION}) {
            if (props.get(required) == null) {
                throw new IllegalArgumentException("catalog property " + required + " is not set");
            }
        }
        props.putIfAbsent(CatalogProperties.CATALOG_IMPL, JdbcCatalog.class.getName());
        props.putIfAbsent("jdbc.schema-version", "V1");
        props.putIfAbsent(CatalogProperties.CLIENT_POOL_SIZE, "1");
        String host = props.getOrDefault("rest.host", "127.0.0.1");
        int port = PropertyUtil.propertyAsInt(props, RESTCatalogServer.REST_PORT, 8181);

        Catalog catalog = CatalogUtil.buildIcebergCatalog("rest_backend", props, new Configuration());
        RESTCatalogAdapter adapter =
                new RESTServerCatalogAdapter(new RESTCatalogServer.CatalogContext(catalog, props));
        ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
        context.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");
        context.insertHandler(new GzipHandler());

        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost(host);
        connector.setPort(port);
        server.addConnector(connector);
        server.setHandler(context);
        server.setStopAtShutdown(true);
        server.start();
        System.out.println("READY http://" + host + ":" + connector.getLocalPort());
        System.out.flush();
        server.join();
    }
}
