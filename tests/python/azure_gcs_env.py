"""Azure Blob Storage (Azurite) and Google Cloud Storage (fake-gcs-server) as each reader
configures them, so the readers read tables on those stores through the stores themselves, the
way a user of that reader would (as s3_env.py does for S3).

The test harness passes the store as `--store JSON` (tests/src/object_stores.rs):

  {"azure": {"endpoint": "http://127.0.0.1:<port>/<account>", "account": ..., "key": ...}}
  {"gcs": {"endpoint": "http://127.0.0.1:<port>"}}            (no authentication)

and each function below gives one reader its own settings:

- pyiceberg: Azure through its FsspecFileIO (adlfs) with `adls.connection-string` (its
  PyArrowFileIO needs pyarrow >= 20 for Azure, and pypaimon 2.1.0 caps pyarrow below 20); GCS
  through its PyArrowFileIO (pyarrow's GcsFileSystem) with `gcs.service.host` and an OAuth2
  token (`gcs.oauth2.token`: the emulator ignores it, and no credential lookup happens).
- DuckDB: Azure through adlfs registered as the connection's file system for abfs:// (DuckDB's
  azure extension reaches Azurite only for az:// and azure:// URLs: for abfs[s]:// it asks the
  account's dfs.core.windows.net host, which no endpoint setting changes); GCS through httpfs
  (a `gcs` secret with the emulator's endpoint, path-style, plain http).
- pypaimon: GCS through its own gs:// FileIO (pyarrow's GcsFileSystem), which takes no endpoint:
  the Google Cloud C++ client under pyarrow reads the emulator's address from
  CLOUD_STORAGE_EMULATOR_ENDPOINT, and pypaimon's `gcs.access-token` keeps it from looking for
  credentials. Azure: pypaimon 2.1.0 has no FileIO for abfs://, wasbs:// or az:// (its
  FileIO.get refuses them: "Unrecognized filesystem type in URI"), so `install_paimon_azure`
  gives it one: its own PyArrowFileIO over pyarrow's AzureFileSystem. pypaimon's reading code
  (snapshots, manifests, merge, data files) is unchanged; only the file system is added.
"""

import functools
import json
import os
from urllib.parse import urlparse

AZURE_SCHEMES = ("abfs", "abfss", "wasb", "wasbs", "az")


def parse(store_json):
    """The `--store` argument: {"azure": {...}} or {"gcs": {...}}, or None."""
    if not store_json:
        return None
    store = json.loads(store_json)
    if len(store) != 1 or next(iter(store)) not in ("azure", "gcs"):
        raise ValueError(f"--store must be {{\"azure\": ...}} or {{\"gcs\": ...}}, not {store_json}")
    return store


def scheme(location):
    return urlparse(location).scheme.lower()


def is_azure(location):
    return scheme(location) in AZURE_SCHEMES


def is_gcs(location):
    return scheme(location) in ("gs", "gcs")


def _azure(store):
    if not store or "azure" not in store:
        raise SystemExit("reading an Azure location needs --store '{\"azure\": {...}}'")
    return store["azure"]


def _gcs(store):
    if not store or "gcs" not in store:
        raise SystemExit("reading a gs:// location needs --store '{\"gcs\": {...}}'")
    return store["gcs"]


def azure_connection_string(store):
    """The account's connection string, its blob endpoint the emulator's (plain http)."""
    a = _azure(store)
    protocol = urlparse(a["endpoint"]).scheme
    return (f"DefaultEndpointsProtocol={protocol};AccountName={a['account']};AccountKey={a['key']};"
            f"BlobEndpoint={a['endpoint']};")


def forget_clients():
    """Drops the adlfs clients fsspec keeps per process (pyiceberg's FsspecFileIO asks fsspec
    for one with the same settings each time, and would get an earlier command's, with its
    listings cache), so each command of a batch process reads the store afresh."""
    try:
        from adlfs import AzureBlobFileSystem
    except ImportError:
        return
    AzureBlobFileSystem.clear_instance_cache()


def pyiceberg_options(location, store):
    """pyiceberg FileIO properties for `location` on the store (Iceberg's own names)."""
    if is_azure(location):
        return {
            "py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO",
            "adls.connection-string": azure_connection_string(store),
        }
    if is_gcs(location):
        return {
            "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO",
            "gcs.service.host": _gcs(store)["endpoint"],
            "gcs.oauth2.token": "unauthenticated-emulator",
            # pyarrow takes a token only with its expiry: 9999-12-31.
            "gcs.oauth2.token-expires-at": "253402214400000",
        }
    return {}


def duckdb_setup(con, location, store):
    """Lets the DuckDB connection `con` read `location` on the store."""
    if is_azure(location):
        from adlfs import AzureBlobFileSystem

        if scheme(location) != "abfs":
            raise ValueError(f"{location}: DuckDB reads Azure tables here through adlfs as abfs:// only")
        # A client of its own (fsspec would hand back the instance, and its listings cache, of an
        # earlier command of a long-lived batch process).
        con.register_filesystem(AzureBlobFileSystem(connection_string=azure_connection_string(store),
                                                    skip_instance_cache=True, use_listings_cache=False))
    elif is_gcs(location):
        endpoint = urlparse(_gcs(store)["endpoint"])
        con.execute("LOAD httpfs")
        con.execute("CREATE OR REPLACE SECRET test_gcs (TYPE gcs, KEY_ID 'unauthenticated', "
                    f"SECRET 'unauthenticated', ENDPOINT '{endpoint.netloc}', URL_STYLE 'path', "
                    f"USE_SSL {'true' if endpoint.scheme == 'https' else 'false'})")


def paimon_options(warehouse, store):
    """pypaimon catalog options for a warehouse on the store (and what it needs besides)."""
    if is_gcs(warehouse):
        os.environ["CLOUD_STORAGE_EMULATOR_ENDPOINT"] = _gcs(store)["endpoint"]
        return {"gcs.access-token": "unauthenticated-emulator"}
    if is_azure(warehouse):
        install_paimon_azure(store)
    return {}


_AZURE_STORE = {}


def install_paimon_azure(store):
    """Makes pypaimon's FileIO.get answer Azure URLs with `AzurePyArrowFileIO` on the store's
    account (once per process; later calls only change the account it reads)."""
    from pypaimon.common.file_io import FileIO

    _AZURE_STORE["store"] = store
    if getattr(FileIO.get, "_azure_gcs_env", False):
        return
    original = FileIO.get

    def get(path, catalog_options=None):
        if is_azure(path):
            return _azure_file_io_class()(path, catalog_options, _AZURE_STORE["store"])
        return original(path, catalog_options)

    get._azure_gcs_env = True
    FileIO.get = staticmethod(get)


@functools.cache
def _azure_file_io_class():
    import logging
    import threading

    from pypaimon.common.options import Options
    from pypaimon.common.uri_reader import UriReaderFactory
    from pypaimon.filesystem.pyarrow_file_io import PyArrowFileIO

    class AzurePyArrowFileIO(PyArrowFileIO):
        """pypaimon's PyArrowFileIO over pyarrow's AzureFileSystem: the state its constructor
        gives a store that is neither OSS nor HDFS, and paths as AzureFileSystem names them
        (`<container>/<path>`)."""

        def __init__(self, path, catalog_options, store):
            options = catalog_options if isinstance(catalog_options, Options) else Options(catalog_options or {})
            self.properties = options
            self.logger = logging.getLogger(__name__)
            self._pyarrow_gte_8 = True
            self._pyarrow_gte_16 = True
            self._oss_bucket_in_endpoint = False
            self.uri_reader_factory = UriReaderFactory(options)
            self._is_oss = False
            self._oss_bucket = None
            self._use_jindo = False
            self._legacy_bucket_checked = False
            self._legacy_bucket_error = None
            self._legacy_bucket_lock = threading.Lock()
            self.filesystem = pyarrow_fs(path, store)

        def to_filesystem_path(self, path):
            # abfs://<container>@<account host>/<path>, az://<container>/<path>
            return fs_path(path) if is_azure(path) else str(path)

    return AzurePyArrowFileIO


def pyarrow_fs(location, store):
    """A pyarrow file system for the store of `location` (what iceberg_read.py lists a table's
    metadata/ directory with): AzureFileSystem on the account, or GcsFileSystem, anonymous."""
    import pyarrow.fs as pafs

    if is_azure(location):
        a = _azure(store)
        endpoint = urlparse(a["endpoint"])
        return pafs.AzureFileSystem(
            account_name=a["account"],
            account_key=a["key"],
            blob_storage_authority=endpoint.netloc,
            dfs_storage_authority=endpoint.netloc,
            blob_storage_scheme=endpoint.scheme,
            dfs_storage_scheme=endpoint.scheme,
        )
    endpoint = urlparse(_gcs(store)["endpoint"])
    return pafs.GcsFileSystem(anonymous=True, scheme=endpoint.scheme, endpoint_override=endpoint.netloc)


def fs_path(location):
    """`location` as pyarrow's file systems name it: `<container or bucket>/<path>`."""
    parsed = urlparse(location)
    container = parsed.netloc.split("@", 1)[0]
    key = "/".join(p for p in parsed.path.split("/") if p)
    return f"{container}/{key}" if key else container


def url_of(location, path):
    """The URL of `path` (named as `fs_path` names it) in the form `location` has: the scheme
    and authority (`<container>@<account host>`) of `location`."""
    parsed = urlparse(location)
    _, _, key = path.partition("/")
    return f"{parsed.scheme}://{parsed.netloc}/{key}"
