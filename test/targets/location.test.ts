import path from "node:path";
import { describe, expect, it } from "vitest";
import { normalizeRepoLocation, parseRepoLocation } from "../../src/targets/location.js";
import { s3Endpoint } from "../../src/targets/s3.js";
import { describeS3Error } from "../../src/targets/s3-errors.js";
import { ObjectNotFound, TargetError } from "../../src/targets/target.js";

describe("repository locations", () => {
  it("local paths resolve; s3://bucket/prefix splits", () => {
    expect(parseRepoLocation("backups/repo")).toEqual({ kind: "local", path: path.resolve("backups/repo") });
    expect(parseRepoLocation("./restic:x")).toEqual({ kind: "local", path: path.resolve("restic:x") });
    expect(parseRepoLocation("s3://my-bucket/pi/guard/")).toEqual({ kind: "s3", bucket: "my-bucket", prefix: "pi/guard" });
    expect(parseRepoLocation("s3://my-bucket")).toEqual({ kind: "s3", bucket: "my-bucket", prefix: "" });
    expect(normalizeRepoLocation("s3://b12/x")).toBe("s3://b12/x");
  });

  it("a scheme pi-guard does not know is a usage error naming the ones it knows", () => {
    for (const repo of ["sftp:host:/x", "gs://bucket/x", "S3:/x", "rclone:remote:path", "Restic:/x"]) {
      expect(() => parseRepoLocation(repo), repo).toThrow(expect.objectContaining({ kind: "usage", message: expect.stringContaining("s3://bucket/prefix, restic:<restic repository> or a local path") }));
    }
  });

  it("restic:<anything restic takes> is a restic repository; restic: alone is a usage error", () => {
    expect(parseRepoLocation("restic:/srv/backup")).toEqual({ kind: "restic", repository: "/srv/backup" });
    expect(parseRepoLocation("restic:s3:http://127.0.0.1:9000/bucket/prefix")).toEqual({ kind: "restic", repository: "s3:http://127.0.0.1:9000/bucket/prefix" });
    expect(parseRepoLocation("restic:sftp:user@host:/srv/restic")).toEqual({ kind: "restic", repository: "sftp:user@host:/srv/restic" });
    expect(normalizeRepoLocation("restic:rel/path")).toBe("restic:rel/path");
    for (const repo of ["restic:", "restic:  "]) {
      expect(() => parseRepoLocation(repo), repo).toThrow(expect.objectContaining({ kind: "usage", message: expect.stringContaining('name the restic repository after "restic:"') }));
    }
  });

  it("bad buckets and prefixes are usage errors", () => {
    for (const repo of ["s3://", "s3://UPPER/x", "s3://a/x", "s3://b12/../x", "s3://b12/a//b"]) {
      expect(() => parseRepoLocation(repo), repo).toThrow(expect.objectContaining({ kind: "usage" }));
    }
  });
});

describe("S3 endpoint", () => {
  it("path-style for an IP or localhost endpoint, virtual-host style otherwise, and an override", () => {
    expect(s3Endpoint({ AWS_ENDPOINT_URL: "http://127.0.0.1:9000" })).toEqual({ endpoint: "http://127.0.0.1:9000", host: "127.0.0.1:9000", pathStyle: true });
    expect(s3Endpoint({ AWS_ENDPOINT_URL_S3: "http://localhost:9000", AWS_ENDPOINT_URL: "https://other" }).pathStyle).toBe(true);
    expect(s3Endpoint({ AWS_ENDPOINT_URL: "http://[::1]:9000" }).pathStyle).toBe(true);
    expect(s3Endpoint({ AWS_ENDPOINT_URL: "https://abc.r2.cloudflarestorage.com" }).pathStyle).toBe(false);
    expect(s3Endpoint({ AWS_ENDPOINT_URL: "https://minio.lan:9000", PI_GUARD_S3_PATH_STYLE: "true" }).pathStyle).toBe(true);
    expect(s3Endpoint({})).toEqual({ endpoint: undefined, host: "", pathStyle: false });
    expect(() => s3Endpoint({ AWS_ENDPOINT_URL: "not a url" })).toThrow(expect.objectContaining({ kind: "usage" }));
  });
});

describe("S3 errors as one line", () => {
  const ctx = { bucket: "bkt", location: "s3://bkt/repo", endpointHost: "", region: "us-east-1", op: "get", key: "config" };
  const sdkError = (name: string, status: number, extra: object = {}) => Object.assign(new Error(`${name} message`), { name, $metadata: { httpStatusCode: status }, ...extra });

  it("wrong region names the bucket's region from the response", () => {
    const e = describeS3Error(sdkError("PermanentRedirect", 301, { $response: { headers: { "x-amz-bucket-region": "eu-west-1" } } }), ctx);
    expect(e.message).toBe('S3 bucket "bkt" is in region eu-west-1, not us-east-1: set AWS_REGION=eu-west-1');
    const m = describeS3Error(sdkError("AuthorizationHeaderMalformed", 400, { message: "the region 'us-east-1' is wrong; expecting 'ap-south-1'" }), ctx);
    expect(m.message).toContain("set AWS_REGION=ap-south-1");
  });

  it("each failure kind gets its own line; only network and server trouble is transient", () => {
    const cases: [unknown, RegExp, boolean][] = [
      [sdkError("NoSuchBucket", 404), /bucket "bkt" does not exist/, false],
      [sdkError("InvalidAccessKeyId", 403), /InvalidAccessKeyId.*AWS_ACCESS_KEY_ID/, false],
      [sdkError("SignatureDoesNotMatch", 403), /AWS_SECRET_ACCESS_KEY/, false],
      [sdkError("AccessDenied", 403), /access denied: get config in s3:\/\/bkt\/repo/, false],
      [Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" }), /cannot reach S3 \(AWS\): ECONNREFUSED/, true],
      [Object.assign(new AggregateError([Object.assign(new Error("x"), { code: "ECONNREFUSED" })]), { code: undefined }), /ECONNREFUSED/, true],
      [sdkError("SlowDown", 503), /SlowDown \(HTTP 503\)/, true],
      [sdkError("InternalError", 500), /InternalError/, true],
      [Object.assign(new Error("Could not load credentials from any providers"), { name: "CredentialsProviderError" }), /no AWS credentials found/, false],
    ];
    for (const [err, re, transient] of cases) {
      const e = describeS3Error(err, ctx);
      expect(e, String(re)).toBeInstanceOf(TargetError);
      expect(e.message).toMatch(re);
      expect(e.message).not.toContain("\n");
      expect((e as TargetError).transient, String(re)).toBe(transient);
    }
    expect(describeS3Error(sdkError("NoSuchKey", 404), ctx)).toBeInstanceOf(ObjectNotFound);
  });
});
