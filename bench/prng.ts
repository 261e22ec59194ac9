// Seeded PRNG so the same --seed always produces the same tree, byte for byte.
// sfc32 is small, fast and good enough for test data; it is not for crypto.

export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: string | number) {
    // Hash the seed text into four 32-bit words (FNV-1a variants) so that
    // nearby seeds such as "1" and "2" still give unrelated streams.
    const text = String(seed);
    const words = [0x811c9dc5, 0x01000193, 0x9e3779b9, 0x85ebca6b];
    for (let i = 0; i < text.length; i++) {
      for (let w = 0; w < 4; w++) {
        words[w] = Math.imul(words[w] ^ text.charCodeAt(i), 0x01000193 + w * 2) >>> 0;
      }
    }
    [this.a, this.b, this.c, this.d] = words;
    for (let i = 0; i < 16; i++) this.nextU32(); // let the state mix before use
  }

  nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform float in [0, 1). */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** Integer in [min, max], inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  /** Log-uniform integer: most values small, a long tail of large ones, like real tool output. */
  logInt(min: number, max: number): number {
    return Math.floor(Math.exp(Math.log(min) + this.next() * (Math.log(max) - Math.log(min))));
  }

  hex(chars: number): string {
    let out = "";
    while (out.length < chars) out += this.nextU32().toString(16).padStart(8, "0");
    return out.slice(0, chars);
  }

  /**
   * Incompressible bytes (signatures, images). A xorshift32 loop seeded from this
   * stream fills whole words, which is much faster than one call per byte.
   */
  bytes(length: number): Buffer {
    const words = new Uint32Array(Math.ceil(length / 4));
    let x = this.nextU32() | 1;
    for (let i = 0; i < words.length; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      words[i] = x;
    }
    return Buffer.from(words.buffer, 0, length);
  }

  /** UUID v7 layout (time-ordered), as pi uses for session ids. */
  uuidV7(unixMs: number): string {
    const time = unixMs.toString(16).padStart(12, "0");
    const rand = this.hex(20);
    const variant = ((parseInt(rand[3], 16) & 0x3) | 0x8).toString(16);
    return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${rand.slice(0, 3)}-${variant}${rand.slice(4, 7)}-${rand.slice(8, 20)}`;
  }
}
