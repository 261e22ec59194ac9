import { ObjectNotFound, TargetError } from "./target.js";

export interface S3ErrorContext {
  bucket: string;
  /** s3://bucket/prefix, for messages. */
  location: string;
  /** The endpoint's host, or "" for AWS itself. */
  endpointHost: string;
  region?: string;
  /** AWS_PROFILE, when set: then the profile is what gave no credentials. */
  profile?: string;
  op: string;
  key?: string;
}

interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  Region?: string;
  errors?: { code?: string }[];
  cause?: { code?: string };
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string | undefined> };
}

const NETWORK = new Set(["ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "ENETUNREACH", "EHOSTUNREACH", "ENETDOWN", "EPROTO"]);
// BadDigest: the body did not match the checksum sent with it (damaged on the way); a retry sends it again.
const RETRYABLE_NAMES = new Set(["BadDigest", "SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "RequestTimeTooSkewed", "InternalError", "ServiceUnavailable", "TooManyRequestsException", "TimeoutError", "RequestTimeoutException"]);

function networkCode(e: SdkError): string | undefined {
  for (const c of [e.code, e.cause?.code, ...(e.errors ?? []).map((x) => x.code)]) if (c && NETWORK.has(c)) return c;
  return undefined;
}

function regionOf(e: SdkError): string | undefined {
  const fromHeader = e.$response?.headers?.["x-amz-bucket-region"];
  if (fromHeader) return fromHeader;
  if (e.Region) return e.Region;
  return /expecting '([a-z0-9-]+)'/.exec(e.message ?? "")?.[1];
}

function firstLine(s: string | undefined): string {
  return (s ?? "").split("\n")[0].slice(0, 200);
}

/**
 * One line a user can act on for every way S3 can fail; messages never carry credentials.
 * Not-found objects become ObjectNotFound; an abort stays the abort.
 */
export function describeS3Error(err: unknown, c: S3ErrorContext): Error {
  const e = (err ?? {}) as SdkError;
  const name = e.name ?? "";
  const status = e.$metadata?.httpStatusCode;
  const where = c.endpointHost ? ` at ${c.endpointHost}` : "";
  const what = c.key !== undefined ? `${c.op} ${c.key}` : c.op;
  if (name === "AbortError" || (err instanceof DOMException && err.name === "AbortError")) return err as Error;
  if (name === "NoSuchKey" || (name === "NotFound" && c.key !== undefined)) return new ObjectNotFound(c.key ?? "");
  if (name === "NoSuchBucket" || (name === "NotFound" && c.key === undefined)) {
    return new TargetError(`S3 bucket "${c.bucket}" does not exist${where}: create it, or fix the bucket name in ${c.location}`, "not-found", false);
  }
  // Any other 404 on an object (servers differ in the error name, or send none for HEAD) is the
  // object missing: the caller reports it as damage, never as an unexplained failure.
  if (status === 404 && c.key !== undefined) return new ObjectNotFound(c.key);
  if (name === "InvalidAccessKeyId") {
    return new TargetError(`S3${where} does not know the access key (InvalidAccessKeyId): check AWS_ACCESS_KEY_ID or AWS_PROFILE`, "io", false);
  }
  if (name === "SignatureDoesNotMatch") {
    return new TargetError(`S3${where} rejected the request signature (SignatureDoesNotMatch): check AWS_SECRET_ACCESS_KEY for this access key`, "io", false);
  }
  if (name === "CredentialsProviderError" || /Could not load credentials/i.test(e.message ?? "")) {
    const fix = c.profile
      ? `profile "${c.profile}" (AWS_PROFILE) gave none; check it in ~/.aws/credentials and ~/.aws/config`
      : "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE";
    return new TargetError(`no AWS credentials found for ${c.location}: ${fix}`, "io", false);
  }
  if (name === "PermanentRedirect" || name === "AuthorizationHeaderMalformed" || name === "IllegalLocationConstraintException" || status === 301) {
    const region = regionOf(e);
    return new TargetError(
      `S3 bucket "${c.bucket}" is in ${region ? `region ${region}` : "another region"}, not ${c.region ?? "the one configured"}: set AWS_REGION${region ? `=${region}` : ""}`,
      "io",
      false,
    );
  }
  if (name === "AccessDenied" || name === "Forbidden" || status === 403) {
    return new TargetError(`access denied: ${what} in ${c.location}${where} (${name || "HTTP 403"}); the credentials need s3:GetObject, PutObject, DeleteObject and ListBucket on it`, "io", false, true);
  }
  const net = networkCode(e);
  if (net) return new TargetError(`cannot reach S3${where || " (AWS)"}: ${net} during ${what}`, "io", true);
  // An answer without a body (HEAD) has no error code: the SDK calls it "Unknown"; the status says more.
  const code = name && name !== "Unknown" ? `${name}${status ? ` (HTTP ${status})` : ""}` : status ? `HTTP ${status}` : "error";
  if (RETRYABLE_NAMES.has(name) || (status !== undefined && (status >= 500 || status === 429))) {
    return new TargetError(`S3${where} failed ${what}: ${code}`, "io", true);
  }
  return new TargetError(`S3${where} failed ${what}: ${code}: ${firstLine(e.message)}`, "io", false);
}
