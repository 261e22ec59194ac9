// The hand-written checks of the repository's plaintext objects (src/repo/shape.ts): key objects
// as parseKeyObject sees them, hostile shapes named in one "path: message", unknown fields dropped.
// (The config's checks run through the CLI in keys-config.test.ts.)
import { describe, expect, it } from "vitest";
import { parseKeyObject } from "../../src/repo/keys.js";

const good = {
  kdf: "scrypt",
  scrypt: { N: 1024, r: 8, p: 1 },
  salt: Buffer.alloc(16, 1).toString("base64"),
  created: "2026-12-02T00:00:00Z",
  host: "h",
  user: "u",
  data: Buffer.alloc(60, 2).toString("base64"),
};
const parse = (v: unknown) => parseKeyObject("k", Buffer.from(typeof v === "string" ? v : JSON.stringify(v)));

describe("key object shape", () => {
  it("keeps the known fields of a good key and drops the others", async () => {
    const r = await parse({ ...good, extra: "x" });
    expect(r.problem).toBeUndefined();
    expect(r.obj).toEqual(good);
    expect((await parse({ ...good, kdf: "hkdf", scrypt: undefined })).obj).toEqual({ ...good, kdf: "hkdf", scrypt: undefined });
  });

  const cases: [string, unknown, string][] = [
    ["not an object", [], "expected an object, got array"],
    ["null", null, "expected an object, got null"],
    ["an unknown kdf", { ...good, kdf: "md5" }, 'kdf: expected one of "scrypt", "hkdf"'],
    ["scrypt with an extra field", { ...good, scrypt: { N: 1024, r: 8, p: 1, q: 2 } }, 'scrypt: unknown key "q"'],
    ["scrypt N a string", { ...good, scrypt: { N: "1024", r: 8, p: 1 } }, "scrypt.N: expected a number, got string"],
    ["scrypt missing for kdf scrypt", { ...good, scrypt: undefined }, "scrypt: missing for kdf scrypt"],
    ["scrypt N not a power of two", { ...good, scrypt: { N: 1000, r: 8, p: 1 } }, "scrypt: scrypt N=1000 is not a power of two"],
    ["a salt that is not base64", { ...good, salt: "%%%" }, "salt: not base64"],
    ["a short salt", { ...good, salt: Buffer.alloc(8).toString("base64") }, "salt: salt shorter than 16 bytes"],
    ["no host", { ...good, host: undefined }, "host: missing"],
    ["data a number", { ...good, data: 5 }, "data: expected a string, got number"],
  ];
  for (const [name, value, problem] of cases) {
    it(`names ${name}`, async () => {
      const r = await parse(value);
      expect(r.obj).toBeUndefined();
      expect(r.problem).toContain(problem);
    });
  }

  it("names bytes that are not JSON", async () => {
    expect((await parse("{")).problem).toBe("not valid JSON");
  });
});
