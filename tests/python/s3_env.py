"""The test S3 server as each reader configures S3 itself, from the environment the test
harness sets (tests/src/s3.rs `reader_env`): S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY,
S3_SECRET_KEY. Each reader gets the settings under its own option names, so the tables are
read through S3 the way a user of that reader would read them."""

import os


def _env():
    keys = ("S3_ENDPOINT", "S3_REGION", "S3_ACCESS_KEY", "S3_SECRET_KEY")
    if not all(os.environ.get(k) for k in keys):
        raise SystemExit("reading an s3:// warehouse needs S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY, S3_SECRET_KEY")
    return {k: os.environ[k] for k in keys}


def is_s3(location: str) -> bool:
    return location.startswith(("s3://", "s3a://"))


def paimon_options(warehouse: str) -> dict:
    """pypaimon catalog options (Paimon's own `s3.*` names)."""
    if not is_s3(warehouse):
        return {}
    e = _env()
    return {
        "s3.endpoint": e["S3_ENDPOINT"],
        "s3.region": e["S3_REGION"],
        "s3.access-key": e["S3_ACCESS_KEY"],
        "s3.secret-key": e["S3_SECRET_KEY"],
        "s3.path.style.access": "true",
    }


def pyiceberg_options(location: str) -> dict:
    """pyiceberg FileIO properties (Iceberg's `s3.*` names)."""
    if not is_s3(location):
        return {}
    e = _env()
    return {
        "s3.endpoint": e["S3_ENDPOINT"],
        "s3.region": e["S3_REGION"],
        "s3.access-key-id": e["S3_ACCESS_KEY"],
        "s3.secret-access-key": e["S3_SECRET_KEY"],
        "s3.connect-timeout": str(CONNECT_TIMEOUT_S),
        "s3.request-timeout": str(REQUEST_TIMEOUT_S),
    }


def duckdb_secret_sql() -> str:
    """DuckDB's CREATE SECRET for the test server (httpfs; path-style URLs, plain HTTP)."""
    e = _env()
    endpoint = e["S3_ENDPOINT"]
    use_ssl = endpoint.startswith("https://")
    host = endpoint.split("://", 1)[-1].rstrip("/")
    q = lambda v: "'" + v.replace("'", "''") + "'"
    return (f"CREATE OR REPLACE SECRET test_s3 (TYPE s3, KEY_ID {q(e['S3_ACCESS_KEY'])}, "
            f"SECRET {q(e['S3_SECRET_KEY'])}, REGION {q(e['S3_REGION'])}, ENDPOINT {q(host)}, "
            f"URL_STYLE 'path', USE_SSL {'true' if use_ssl else 'false'})")


def lance_options(uri: str) -> dict:
    """pylance storage options (object_store's names), or None for a local dataset."""
    if not is_s3(uri):
        return None
    e = _env()
    return {
        "endpoint": e["S3_ENDPOINT"],
        "region": e["S3_REGION"],
        "access_key_id": e["S3_ACCESS_KEY"],
        "secret_access_key": e["S3_SECRET_KEY"],
        "allow_http": "true",
    }


# The test server answers one request at a time (cluster/s3/server.py): while another test
# uploads a 1 GiB file through it, a request can wait far longer than the AWS SDK's default
# timeouts (1 s to connect, 3 s per request), which failed a listing under load.
CONNECT_TIMEOUT_S = 30
REQUEST_TIMEOUT_S = 300


def pyarrow_fs():
    """A pyarrow S3FileSystem for the test server."""
    from pyarrow import fs

    e = _env()
    return fs.S3FileSystem(
        endpoint_override=e["S3_ENDPOINT"],
        region=e["S3_REGION"],
        access_key=e["S3_ACCESS_KEY"],
        secret_key=e["S3_SECRET_KEY"],
        force_virtual_addressing=False,
        connect_timeout=CONNECT_TIMEOUT_S,
        request_timeout=REQUEST_TIMEOUT_S,
    )
