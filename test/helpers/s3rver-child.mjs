// s3rver in a process of its own, so a test can kill -9 the server and start it again on the same
// folder. argv: <dir> <port> <bucket>. Prints "LISTENING <port>" once ready, and "PART" when a
// multipart part upload arrives (the moment a test may kill it mid-upload).
import S3rver from "s3rver";

const [dir, port, bucket] = process.argv.slice(2);
const server = new S3rver({ address: "127.0.0.1", port: Number(port), directory: dir, silent: true, configureBuckets: bucket ? [{ name: bucket }] : [] });
const address = await server.run();
server.httpServer.on("request", (req) => {
  if (req.method === "PUT" && /[?&]partNumber=/.test(req.url ?? "")) process.stdout.write("PART\n");
});
process.stdout.write(`LISTENING ${address.port}\n`);
