/*
 * Apache Paimon's REST catalog test server (paimon-core's test fixture RESTCatalogServer: an okhttp
 * MockWebServer answering Paimon's REST API, databases, tables and snapshots kept in its memory,
 * the tables' files written by the clients under a local data path), on a fixed address: the
 * stock server's start() takes a random port. Compiled and started by cluster/paimon-rest/setup.sh
 * and start.sh.
 *
 * Configured from the environment (start.sh sets it; the token stays off the command line):
 * PAIMON_REST_HOST (127.0.0.1 unless set), PAIMON_REST_PORT, PAIMON_REST_DATA (the data path),
 * PAIMON_REST_WAREHOUSE (the warehouse name clients must ask GET /v1/config for),
 * PAIMON_REST_TOKEN (the bearer token every request must carry; any other answers 401).
 * GET /v1/config answers the defaults prefix=paimon (the REST paths' /v1/paimon/...),
 * warehouse=<name>, data-token.enabled=false (clients use their own file IO on the data path).
 * A request the fixture fails on answers 500 (it would hang). Logs one line per request (method, path, status; no headers or bodies) and prints
 * "READY http://<host>:<port>" once it listens.
 */
package org.apache.paimon.rest;

import java.lang.reflect.Field;
import java.net.InetAddress;
import java.util.HashMap;
import java.util.Map;
import okhttp3.mockwebserver.Dispatcher;
import okhttp3.mockwebserver.MockResponse;
import okhttp3.mockwebserver.MockWebServer;
import okhttp3.mockwebserver.RecordedRequest;
import org.apache.paimon.options.CatalogOptions;
import org.apache.paimon.rest.auth.BearTokenAuthProvider;
import org.apache.paimon.rest.responses.ConfigResponse;

public final class LoopbackPaimonRESTServer {
    private LoopbackPaimonRESTServer() {}

    private static String env(String name, String fallback) {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            if (fallback == null) {
                throw new IllegalArgumentException("environment variable " + name + " is not set");
            }
            return fallback;
        }
        return v;
    }

    public static void main(String[] args) throws Exception {
        String host = env("PAIMON_REST_HOST", "127.0.0.1");
        int port = Integer.parseInt(env("PAIMON_REST_PORT", null));
        String dataPath = env("PAIMON_REST_DATA", null);
        String warehouse = env("PAIMON_REST_WAREHOUSE", null);
        String token = env("PAIMON_REST_TOKEN", null);

        Map<String, String> defaults = new HashMap<>();
        // The REST paths' prefix: a client without one builds /v1/databases, which the server
        // (routing /v1/<prefix>/...) does not serve.
        defaults.put(RESTCatalogInternalOptions.PREFIX.key(), "paimon");
        defaults.put(CatalogOptions.WAREHOUSE.key(), warehouse);
        defaults.put(RESTTokenFileIO.DATA_TOKEN_ENABLED.key(), "false");
        RESTCatalogServer catalog =
                new RESTCatalogServer(
                        dataPath,
                        new BearTokenAuthProvider(token),
                        new ConfigResponse(defaults, new HashMap<>()),
                        warehouse);

        // start() binds a random port on every interface: start its MockWebServer ourselves.
        Field field = RESTCatalogServer.class.getDeclaredField("server");
        field.setAccessible(true);
        MockWebServer server = (MockWebServer) field.get(catalog);
        Dispatcher inner = server.getDispatcher();
        server.setDispatcher(
                new Dispatcher() {
                    @Override
                    public MockResponse dispatch(RecordedRequest request) throws InterruptedException {
                        MockResponse response;
                        try {
                            response = inner.dispatch(request);
                        } catch (RuntimeException e) {
                            // The fixture's own handler of a failed request can fail itself (a
                            // GET /v1/config without ?warehouse=: a NullPointerException on the
                            // exception's missing cause); MockWebServer then leaves the
                            // connection open, unanswered, and the client hangs.
                            e.printStackTrace(System.out);
                            response =
                                    new MockResponse()
                                            .setResponseCode(500)
                                            .setHeader("Content-Type", "application/json")
                                            .setBody("{\"message\":\"internal error: "
                                                    + String.valueOf(e).replace('"', '\'')
                                                    + "\",\"code\":500}");
                        }
                        System.out.println(
                                request.getMethod() + " " + request.getPath() + " -> " + response.getStatus());
                        System.out.flush();
                        return response;
                    }
                });
        server.start(InetAddress.getByName(host), port);
        Runtime.getRuntime()
                .addShutdownHook(
                        new Thread(
                                () -> {
                                    try {
                                        server.shutdown();
                                    } catch (Exception ignored) {
                                        // exiting anyway
                                    }
                                }));
        System.out.println("READY http://" + host + ":" + server.getPort() + " warehouse=" + warehouse
                + " data=" + dataPath);
        System.out.flush();
        Thread.currentThread().join();
    }
}
