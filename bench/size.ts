// "1GiB", "64MiB", "500MB", "1048576" -> bytes.
const UNITS: Record<string, number> = {
  "": 1, b: 1,
  k: 1e3, kb: 1e3, kib: 1024,
  m: 1e6, mb: 1e6, mib: 1024 ** 2,
  g: 1e9, gb: 1e9, gib: 1024 ** 3,
};

export function parseSize(text: string): number {
  const m = /^\s*([\d.]+)\s*([a-z]*)\s*$/i.exec(text);
  const unit = m ? UNITS[m[2].toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new Error(`cannot read size "${text}" (try 1GiB or 64MiB)`);
  return Math.round(parseFloat(m[1]) * unit);
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}
