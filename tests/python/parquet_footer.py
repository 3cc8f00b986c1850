#!/usr/bin/env python3
"""Prints what the footer of a Parquet file on the test S3 server says, read with pyarrow's
own S3 client (ranged reads: the data pages are not fetched).

  parquet_footer.py s3://<bucket>/<key>     -> {"num_rows": n, "row_groups": n, "size": bytes}
  parquet_footer.py batch                   (reads commands from stdin, one JSON array of
                                             arguments per line: arrow_canonical.run_batch)
"""
import argparse
import json
import sys

import s3_env
from arrow_canonical import run_batch


def main(argv, allow_batch=True):
    if allow_batch and argv[:1] == ["batch"]:
        run_batch(main)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", help="s3://<bucket>/<key>")
    args = parser.parse_args(argv)

    import pyarrow.parquet as pq

    fs = s3_env.pyarrow_fs()
    path = args.url.split("://", 1)[1]
    size = fs.get_file_info(path).size
    with fs.open_input_file(path) as f:
        meta = pq.ParquetFile(f).metadata
        print(json.dumps({"num_rows": meta.num_rows, "row_groups": meta.num_row_groups, "size": size}))


if __name__ == "__main__":
    main(sys.argv[1:])
