"""Prepares the test S3 server: the bucket, an IAM user with an access key, a role Fluss can
assume for its clients' session credentials, then turns authentication on. Writes the
credentials as shell assignments (KEY=value lines) to the file given.

Usage: setup_account.py ENDPOINT BUCKET CREDENTIALS_FILE
"""
import json
import sys
import urllib.request

import boto3

ENDPOINT, BUCKET, OUT = sys.argv[1:4]
REGION = "us-east-1"
ALLOW_ALL = json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
)


def client(service, **kw):
    return boto3.client(
        service,
        endpoint_url=ENDPOINT,
        region_name=REGION,
        aws_access_key_id=kw.get("key", "setup"),
        aws_secret_access_key=kw.get("secret", "setup"),
    )


iam = client("iam")
user_arn = iam.create_user(UserName="fluss-lake")["User"]["Arn"]
iam.put_user_policy(UserName="fluss-lake", PolicyName="all", PolicyDocument=ALLOW_ALL)
key = iam.create_access_key(UserName="fluss-lake")["AccessKey"]
trust = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": user_arn}, "Action": "sts:AssumeRole"}
        ],
    }
)
role = iam.create_role(RoleName="fluss-clients", AssumeRolePolicyDocument=trust)["Role"]
iam.put_role_policy(RoleName="fluss-clients", PolicyName="all", PolicyDocument=ALLOW_ALL)
client("s3").create_bucket(Bucket=BUCKET)

# From now on every request must be signed with a known key.
req = urllib.request.Request(
    f"{ENDPOINT}/moto-api/reset-auth", data=b"0", method="POST", headers={"Content-Type": "text/plain"}
)
urllib.request.urlopen(req).read()

s3 = client("s3", key=key["AccessKeyId"], secret=key["SecretAccessKey"])
s3.put_object(Bucket=BUCKET, Key=".setup-check", Body=b"ok")
s3.delete_object(Bucket=BUCKET, Key=".setup-check")
try:
    client("s3", key=key["AccessKeyId"], secret="wrong").list_objects_v2(Bucket=BUCKET)
    sys.exit("error: the S3 server accepted a wrong secret key: authentication is not on")
except s3.exceptions.ClientError:
    pass

with open(OUT, "w") as f:
    f.write(
        f"S3_ENDPOINT={ENDPOINT}\nS3_REGION={REGION}\nS3_BUCKET={BUCKET}\n"
        f"S3_ACCESS_KEY={key['AccessKeyId']}\nS3_SECRET_KEY={key['SecretAccessKey']}\n"
        f"S3_ROLE_ARN={role['Arn']}\n"
    )
print(f"bucket {BUCKET}, user fluss-lake ({key['AccessKeyId']}), role {role['Arn']}; authentication on")
