# Settings of the test Azure Blob Storage emulator, Azurite (sourced by setup.sh, start.sh, stop.sh).
: "${REPO:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
# Azurite's version is pinned in package.json / package-lock.json beside this file (3.35.0: the
# newest that runs on Node.js 20; 3.36 needs 21, 3.37 needs 22).
: "${AZURITE_INSTALL:=$REPO/target/azurite-dist}"   # npm ci here: node_modules/azurite
: "${AZURITE_DIR:=$REPO/target/azurite}"            # pid, log, credentials.env (the data: in memory)
: "${AZURITE_PORT:=10010}"                          # not Azurite's default 10000: a developer's own may run
: "${AZURITE_ACCOUNT:=flusslake}"                   # a custom account with a random key (AZURITE_ACCOUNTS)
: "${AZURITE_CONTAINER:=fluss}"
AZURITE_ENDPOINT="http://127.0.0.1:$AZURITE_PORT/$AZURITE_ACCOUNT"
