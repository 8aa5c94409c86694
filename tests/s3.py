"""A real S3-compatible server for the tests: moto in server mode (HTTP on 127.0.0.1),
spoken to through boto3 here and through datacurate.formats.storage (pyarrow) by the code."""

from __future__ import annotations

import logging
import os
import urllib.request
from pathlib import Path

import boto3


def start_server(endpoint: str):
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    port = int(endpoint.rsplit(":", 1)[1])
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return server


def client(service: str = "s3", **kw):
    return boto3.client(service, endpoint_url=os.environ["AWS_ENDPOINT_URL"], **kw)


def make_bucket(name: str) -> str:
    s3 = client()
    try:
        s3.create_bucket(Bucket=name)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    return name


def upload_dir(local: Path, url: str) -> None:
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    for f in sorted(Path(local).rglob("*")):
        if f.is_file():
            client().upload_file(str(f), bucket, f"{prefix}/{f.relative_to(local)}".lstrip("/"))


def keys(url: str) -> list[str]:
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    pages = client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def get(url: str) -> bytes:
    bucket, _, key = url.removeprefix("s3://").partition("/")
    return client().get_object(Bucket=bucket, Key=key)["Body"].read()


def set_auth(on: bool) -> None:
    """Turn moto's IAM checks on (every request must carry a known key allowed the action)
    or off (any key is accepted)."""
    req = urllib.request.Request(os.environ["AWS_ENDPOINT_URL"] + "/moto-api/reset-auth",
                                 data=b"0" if on else b"inf", method="POST",
                                 headers={"Content-Type": "application/octet-stream"})
    urllib.request.urlopen(req).read()


def iam_user(name: str, allow_s3: bool) -> dict[str, str]:
    """A user of the server's IAM (auth off while it is made); its keys as environment variables."""
    iam = client("iam", region_name="us-east-1")
    iam.create_user(UserName=name)
    if allow_s3:
        iam.put_user_policy(UserName=name, PolicyName="s3", PolicyDocument=(
            '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}'))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}
