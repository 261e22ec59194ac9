// s3rver in a process of its own, so a test can kill -9 the server and start it again on the same
// folder. argv: <dir> <port> <bucket>. Prints "LISTENING <port>" once ready, "PART" when a
// multipart part upload arrives and "PACK" when a one-request PUT of a pack (a key under data/)
// does (the moment a test may kill it mid-upload).
// S3RVER_VANISH_AFTER_LIST=<key>: the first listing that holds <key> answers with it, and the key
// is deleted before the answer is sent, so the client's next GET of it gets a 404: what a listing
// that lags behind a delete (another host's prune, a lifecycle rule) looks like to a client.
// A PUT that sends x-amz-checksum-sha256 is checked against it, as S3 does: a body that differs is
// refused with BadDigest and nothing is stored (s3rver 3.7.1 ignores the header).
// S3RVER_NO_CHECKSUMS=1 leaves that out (bench:s3: S3 does the hashing on its own machines, here it
// would take the tools' shared cores).
import { createHash } from "node:crypto";
import { mkdir, rename, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import S3rver from "s3rver";
import S3Error from "s3rver/lib/models/error.js";
import S3Object from "s3rver/lib/models/object.js";

const METADATA = new Set(S3Object.ALLOWED_METADATA);

const [dir, port, bucket] = process.argv.slice(2);
const server = new S3rver({ address: "127.0.0.1", port: Number(port), directory: dir, silent: true, configureBuckets: bucket ? [{ name: bucket }] : [] });

// s3rver 3.7.1 keeps a key's folders as directories and removes them once a DELETE leaves them
// empty. A PUT of another key in that folder that has already made the directory then opens its
// file in a removed one, and the write stream's ENOENT has no listener: the server process dies
// (two hosts' lock files in locks/ did this in CI). S3 has no folders to remove, so this DELETE
// removes only the key's own files; an empty directory lists nothing.
const store = server.store;
store.deleteObject = async (b, key) => {
  const files = ["object", "object.md5", "metadata.json"].map((kind) => store.getResourcePath(b, key, kind));
  await Promise.all(files.map((f) => unlink(f).catch((err) => { if (err.code !== "ENOENT") throw err; })));
};

// S3 stores a PUT whole or not at all. s3rver 3.7.1 writes the body into the object's file as it
// arrives (and answers a buffered one before its file is written), so a request cut short (a
// client that aborts it, this process killed mid-upload) left a truncated object that later reads
// found. Here the body is gathered first, written to a temporary file and renamed into place once
// it has ended; a body that never ends stores nothing.
let partials = 0;
/** Written to a temporary file and renamed into place: a reader sees the old bytes or the new, never a part. */
const writeAtomic = async (file, data) => {
  const partial = `${file}.partial-${process.pid}-${++partials}`;
  await writeFile(partial, data);
  await rename(partial, file);
};
store.putObject = async (object) => {
  let content = object.content;
  const sha256 = !Buffer.isBuffer(content) && process.env.S3RVER_NO_CHECKSUMS !== "1" ? content.headers?.["x-amz-checksum-sha256"] : undefined;
  if (!Buffer.isBuffer(content)) {
    const chunks = [];
    await new Promise((resolve, reject) => {
      content.on("data", (c) => chunks.push(c));
      content.on("end", resolve);
      content.on("error", reject);
      content.on("aborted", () => reject(new Error("request aborted")));
    });
    content = Buffer.concat(chunks);
  }
  if (sha256 && createHash("sha256").update(content).digest("base64") !== sha256) {
    throw new S3Error("BadDigest", "The SHA256 you specified did not match the calculated checksum.");
  }
  const objectPath = store.getResourcePath(object.bucket, object.key, "object");
  await mkdir(path.dirname(objectPath), { recursive: true });
  await writeAtomic(objectPath, content);
  const md5 = createHash("md5").update(content).digest("hex");
  await store.putMetadata(object.bucket, object.key, object.metadata, md5);
  return { size: content.length, md5 };
};

// s3rver 3.7.1 writes an object's metadata.json with a plain writeFile, which truncates it first: a
// listing that reads it meanwhile (a lock being refreshed while another process lists locks/) parses
// an empty file and answers HTTP 500. S3 never shows a key half-written, so it is written whole
// (writeAtomic), as the object is above.
store.putMetadata = async (b, key, metadata, md5) => {
  const json = {};
  for (const [k, v] of Object.entries(metadata ?? {})) if (METADATA.has(k) || k.startsWith("x-amz-meta-")) json[k] = v;
  if (md5) await writeAtomic(store.getResourcePath(b, key, "object.md5"), md5);
  await writeAtomic(store.getResourcePath(b, key, "metadata.json"), JSON.stringify(json, null, 2));
};

let vanish = process.env.S3RVER_VANISH_AFTER_LIST;
if (vanish) {
  const listObjects = store.listObjects.bind(store);
  store.listObjects = async (b, options) => {
    const listed = await listObjects(b, options);
    if (vanish && listed.objects.some((o) => o.key === vanish)) {
      await store.deleteObject(b, vanish);
      vanish = undefined;
    }
    return listed;
  };
}

const address = await server.run();
server.httpServer.on("request", (req) => {
  if (req.method !== "PUT") return;
  if (/[?&]partNumber=/.test(req.url ?? "")) process.stdout.write("PART\n");
  else if (/\/data\/[0-9a-f]{2}\/[0-9a-f]+(\?|$)/.test(req.url ?? "")) process.stdout.write("PACK\n");
});
process.stdout.write(`LISTENING ${address.port}\n`);
