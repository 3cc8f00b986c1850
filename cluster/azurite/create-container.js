// Creates a blob container with a Shared Key request (the Blob REST API, Node's own crypto and
// http: nothing to install):
//   node create-container.js <account URL> <account> <base64 key> <container>
// An existing container is fine.
"use strict";
const crypto = require("crypto");
const http = require("http");

const [endpoint, account, key, container] = process.argv.slice(2);
const url = new URL(`${endpoint.replace(/\/$/, "")}/${container}?restype=container`);
const date = new Date().toUTCString();
const version = "2021-08-06";
// The string to sign of a PUT without a body: the verb, eleven empty standard headers, then the
// x-ms-* headers and the resource (path-style: /<account>/<account>/<container>).
const stringToSign = [
  "PUT", "", "", "", "", "", "", "", "", "", "", "",
  `x-ms-date:${date}\nx-ms-version:${version}\n/${account}${url.pathname}\nrestype:container`,
].join("\n");
const signature = crypto.createHmac("sha256", Buffer.from(key, "base64")).update(stringToSign, "utf8").digest("base64");
const request = http.request(url, {
  method: "PUT",
  headers: {
    "x-ms-date": date,
    "x-ms-version": version,
    "Content-Length": 0,
    Authorization: `SharedKey ${account}:${signature}`,
  },
}, (response) => {
  let body = "";
  response.on("data", (chunk) => (body += chunk));
  response.on("end", () => {
    if (response.statusCode === 201 || response.statusCode === 409) {
      console.log(`container ${container}: ${response.statusCode === 201 ? "created" : "exists"}`);
    } else {
      console.error(`creating container ${container}: HTTP ${response.statusCode}: ${body}`);
      process.exitCode = 1;
    }
  });
});
request.on("error", (e) => {
  console.error(`creating container ${container}: ${e.message}`);
  process.exitCode = 1;
});
request.end();
