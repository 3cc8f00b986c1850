#!/usr/bin/env python3
"""Prints what the footer of a Parquet file on the test S3 server says, read with pyarrow's
own S3 client (ranged reads: the data pages are not fetched).

  parquet_footer.py s3://<bucket>/<key>     -> {"num_rows": n, "row_groups": n, "size": bytes}
"""
import json
import sys

import pyarrow.parquet as pq

import s3_env

url = sys.argv[1]
fs = s3_env.pyarrow_fs()
path = url.split("://", 1)[1]
size = fs.get_file_info(path).size
with fs.open_input_file(path) as f:
    meta = pq.ParquetFile(f).metadata
    print(json.dumps({"num_rows": meta.num_rows, "row_groups": meta.num_row_groups, "size": size}))
