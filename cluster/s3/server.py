"""An S3-compatible server on loopback for the tests: moto's server mode (PyPI), with IAM
authentication on and every request handled one at a time.

Why moto: it implements the S3 API the tests need as AWS documents it — conditional creates
(`If-None-Match: *` on PutObject and CompleteMultipartUpload, 412 PreconditionFailed),
multipart uploads (parts invisible until completed, aborts leave nothing), ranged GETs,
paginated ListObjectsV2 — plus IAM and STS, which Fluss's S3 file system needs to hand
out session credentials to its clients (GetSessionToken / AssumeRole). Its checks for
conditional creates are a test and then a write: run concurrently, two requests could both
pass the test. AWS's creates are atomic, so this server serializes requests (one lock around
each), which makes every request atomic as on AWS. Signatures are checked over exactly the
headers a request signed, as AWS checks them (see below).

The same server is the tests' AWS Glue Data Catalog (moto's Glue, reached at the same endpoint:
requests are routed by the service their signature names). Its UpdateTable honours the
table's VersionId as AWS does (honour_glue_version_ids).

Usage: server.py --port P --data DIR [--no-auth]
  Prints "READY <port>" once it accepts requests. Objects above 8 MiB spill to DIR.
"""
import argparse
import os
import sys
import threading


def honour_glue_version_ids() -> None:
    """AWS Glue's UpdateTable takes the table's VersionId as an optimistic lock: a version other
    than the table's current one fails with ConcurrentModificationException (Iceberg's Java
    GlueTableOperations, and the host, commit under it). moto (5.2.5) ignores it; check it as
    AWS does. Requests are serialized (see main), so the check and the update are one step."""
    from moto.core.exceptions import JsonRESTError
    from moto.glue.responses import GlueResponse

    update_table = GlueResponse.update_table

    def checked_update_table(self):  # type: ignore[no-untyped-def]
        version = self.parameters.get("VersionId")
        if version is not None:
            table = self.glue_backend.get_table(
                self.parameters.get("DatabaseName"), self.parameters["TableInput"]["Name"]
            )
            if str(version) != str(table._current_version):
                raise JsonRESTError(
                    "ConcurrentModificationException",
                    "Update table failed due to concurrent modifications.",
                )
        return update_table(self)

    GlueResponse.update_table = checked_update_table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    if not args.host.startswith("127.") and args.host != "localhost":
        sys.exit("error: the test S3 server binds to loopback only")
    os.makedirs(args.data, exist_ok=True)
    # Object bodies over moto's in-memory buffer spill into temporary files: keep them here.
    os.environ["TMPDIR"] = args.data
    import tempfile

    tempfile.tempdir = args.data

    # moto checks a request's signature by signing it again with botocore, which leaves the
    # User-Agent header out of what it signs. AWS checks exactly the headers the request lists
    # as signed, and the AWS SDK for Java v1 (Hadoop S3A: Fluss's and Paimon's S3 file
    # systems) signs its User-Agent: with botocore's exclusions, every one of its requests
    # would be refused. Verify what the client signed, as AWS does.
    import botocore.auth

    botocore.auth.SIGNED_HEADERS_BLACKLIST = []

    honour_glue_version_ids()

    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serialized(environ, start_response):
        with lock:
            body = app(environ, start_response)
            try:
                chunks = [b"".join(body)]
            finally:
                close = getattr(body, "close", None)
                if close is not None:
                    close()
            return chunks

    server = make_server(args.host, args.port, serialized, threaded=True)
    print(f"READY {server.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
